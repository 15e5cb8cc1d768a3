"""The stateful processor the adapter runs on streams, in a module that imports nothing heavy.

Spark starts a fresh Python process for every streaming query (``python -m
pyspark.sql.streaming.transform_with_state_driver_worker``, PySpark read from its zip) to call
a processor's ``init`` and learn its state variables. That process unpickles the processor, so
it imports the processor's module and whatever the pickled fields need: with the class in
``windowkit.spark.adapter`` (pandas, pyarrow, numba) and the operator's factory pickled as it
is, that took 0.44 s of every query's first micro-batch. Here the class needs only PySpark's
streaming API, and the factory travels as bytes, unpickled on first use: the driver's worker
never builds an operator, and an executor's worker has the adapter imported already (the
daemon preloads it).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any

from pyspark import cloudpickle
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

#: A stream's own columns travel to the stateful step under these names, for late rows' JSON.
ORIGINAL_PREFIX = "wk_original_"
RUNNER_SCHEMA = T.StructType([T.StructField("runner", T.BinaryType(), True)])
_BLOB = T.StructType([T.StructField("state", T.BinaryType(), True)])
_CHUNK_KEY = T.StructType([T.StructField("chunk", T.LongType(), True)])


def declare_chunk_states(handle: StatefulProcessorHandle) -> tuple[Any, Any]:
    """Declare a chunked shard's state variables (in ``init``): ``(index, chunks)``, a value
    holding the shard's index and a map of chunk number to the chunk's keys.

    Examples
    --------
    >>> class Handle:
    ...     def getValueState(self, name, schema): return ("value", name)
    ...     def getMapState(self, name, key, value): return ("map", name)
    >>> declare_chunk_states(Handle())
    (('value', 'wk_index'), ('map', 'wk_chunks'))
    """
    return (handle.getValueState("wk_index", _BLOB),
            handle.getMapState("wk_chunks", _CHUNK_KEY, _BLOB))


class RunnerProcessor(StatefulProcessor):
    """``transformWithStateInPandas`` processor holding one ``EventTimeRunner`` per shard.

    Parameters
    ----------
    factory : callable
        Builds a fresh operator; pickled on its own and rebuilt on first use.
    shipped, folded, delay_us, group_ids, originals, categorical, key_carrier,
    event_output, upstream_watermark
        How the adapter packs a stream's rows and what the stateful step reads of them (see
        :func:`~windowkit.spark.adapter.run_operator`).

    Examples
    --------
    >>> import pickle
    >>> from windowkit.core.frames import ThresholdFramer
    >>> processor = RunnerProcessor(lambda: ThresholdFramer("2 rows"), ["value"], None, 0, [0])
    >>> copy = pickle.loads(pickle.dumps(processor))
    >>> copy.key_partitioned, copy._factory is None, type(copy.factory()).__name__
    (True, True, 'ThresholdFramer')
    """

    def __init__(
        self, factory: Callable[[], Any], shipped: list[str],
        folded: str | None, delay_us: int | None, group_ids: list[int],
        originals: list[tuple[str, str]] | None = None,
        categorical: tuple[str, ...] = (), key_carrier: str | None = None,
        event_output: str | None = None, upstream_watermark: bool = False,
    ) -> None:
        self._factory_bytes = cloudpickle.dumps(factory)
        self._factory: Callable[[], Any] | None = factory
        #: Whether the operator's state is per key (kept in chunks once there are many keys).
        self.key_partitioned = bool(factory().KEY_PARTITIONED)
        self.key_carrier = key_carrier
        #: The output column Spark's watermark goes on downstream (a timestamp), if any.
        self.event_output = event_output
        #: Whether the input's watermark comes from a step before this one (a windowkit
        #: output, or the user's ``withWatermark``) rather than from the adapter.
        self.upstream_watermark = upstream_watermark
        self.categorical = categorical
        self.originals = originals or []
        # the user's columns that travel on their own (the others ride in shipped inputs),
        # and every column a late row's copy of the user's row is read from
        self.original_columns = [column for _, column in self.originals
                                 if column.startswith(ORIGINAL_PREFIX)]
        self.carrier_columns = list(dict.fromkeys(column for _, column in self.originals))
        self.shipped = shipped
        self.folded = folded
        self.delay_us = delay_us
        self.shard_of = {group: shard for shard, group in enumerate(group_ids)}
        self.chunk_states: tuple[Any, Any] | None = None  # declared by init() if key_partitioned
        self.store = None  # the ChunkStore over chunk_states, built on first use
        self.index = None

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_factory"] = None  # travels as _factory_bytes
        return state

    def factory(self) -> Any:
        """A fresh operator."""
        if self._factory is None:
            self._factory = pickle.loads(self._factory_bytes)
        return self._factory()

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = handle.getValueState("runner", RUNNER_SCHEMA)
        # an operator whose state is per key keeps its keys in chunks once there are many
        self.chunk_states = declare_chunk_states(handle) if self.key_partitioned else None
        self.store = None

    def _chunk_store(self):
        if self.store is None and self.chunk_states is not None:
            from windowkit.spark.chunk_store import ChunkStore
            self.store = ChunkStore(self.state, *self.chunk_states, self.factory)
        return self.store

    def _next_watermark_at_least(self, rows) -> int | None:
        """A bound the next micro-batch's watermark cannot fall below.

        Spark sets it to the largest event time seen (in whole milliseconds) minus the delay,
        over all shards, so it is at least this shard's largest time so derived. Rows behind
        it will be late then, so the rows it passes can be released now rather than held in
        state for one more micro-batch: the same output, one micro-batch sooner.
        """
        from windowkit.core.operator import TIME
        if self.delay_us is None or not len(rows):
            return None
        return int(rows[TIME].max()) // 1000 * 1000 - self.delay_us

    def _load(self, keys=(), watermark: int | None = None):
        store = self._chunk_store()
        if store is not None:
            runner, self.index = store.load(keys, watermark)
            return runner
        from windowkit.spark.chunk_store import stored_runner
        return stored_runner(self.state, self.factory)

    def _save(self, runner) -> None:
        store = self._chunk_store()
        if store is not None:
            due = store.save(runner, self.index)
        else:
            from windowkit.core.serialization import compress_state
            # compressed: Spark's state API moves bytes at 50-100 MB/s, a state's arrays
            # compress tenfold at 0.6 GB/s (and the checkpoint keeps a tenth of the bytes)
            self.state.update((compress_state(runner.to_bytes()),))
            due = runner.next_timer()
        for timer in list(self.handle.listTimers()):
            self.handle.deleteTimer(timer)
        if due is not None:
            # µs -> ms, rounded up. Spark's watermark starts at 0 ms, so a timer at or before
            # 0 ms fires at once and, re-registered by its own handler at the same time, is
            # deleted with the fired one: 1 ms is the first watermark that can settle it.
            self.handle.registerTimer(max(1, -(-due // 1000)))

    def handleInputRows(self, key, rows, timerValues) -> Iterator:
        import pandas as pd

        from windowkit.spark import adapter as a
        from windowkit.spark.kill_hooks import wait_to_be_killed

        wait_to_be_killed()
        good, rejected = a._take_rejected(a._unpack_rows(rows),
                                          self.shipped + self.original_columns, self.folded)
        if self.key_carrier is not None:
            good = a._key_from_carrier(good, self.key_carrier)
        originals = good.select(self.carrier_columns) if self.carrier_columns else None
        good = a._arrow_to_frame(good.select([a.KEY, a.TIME, *self.shipped]), self.folded,
                                 self.categorical)
        watermark, next_at_least = (a._watermark_us(timerValues),
                                    self._next_watermark_at_least(good))
        store = self._chunk_store()
        keys = good[store.key_column] if store is not None else ()
        runner = self._load(keys, max((w for w in (watermark, next_at_least)
                                       if w is not None), default=None))
        if self.upstream_watermark:
            # Rows a step before this one emitted in this very micro-batch lie behind its
            # watermark (a frame ends once the watermark passes its end): Spark judges them
            # by the previous micro-batch's watermark, as its own stateful steps do, and so
            # does this, by the watermark this shard applied last (never above that one).
            output, late = runner.push(good)
            settled = runner.advance(watermark)
        else:
            # Spark's rule for a watermark defined on the input: a row is late if the
            # watermark in force when its micro-batch starts has passed it, so apply this
            # batch's watermark before admitting the rows.
            settled = runner.advance(watermark)
            output, late = runner.push(good)
        ahead = runner.advance(next_at_least)
        output = pd.concat([o for o in (settled, output, ahead) if len(o)] or [output],
                           ignore_index=True)
        if len(late):
            rejected = pd.concat([rejected, a._late_frame(late, originals, self.originals)],
                                 ignore_index=True)
        self._save(runner)
        yield a._to_spark_frame(output, rejected, runner.operator.output_schema,
                                self.shard_of[int(key[0])], self.event_output)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator:
        import pandas as pd

        from windowkit.spark import adapter as a
        watermark = a._watermark_us(timerValues)
        runner = self._load((), watermark)
        output = runner.advance(watermark)
        self._save(runner)
        yield a._to_spark_frame(output, pd.DataFrame(), runner.operator.output_schema,
                                self.shard_of[int(key[0])], self.event_output)

    def close(self) -> None:
        pass
