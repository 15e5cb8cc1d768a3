"""A windowed Count-Min sketch behind the :class:`~windowkit.core.operator.StreamOperator` contract.

Each shard runs one operator and emits its current count matrix as a *snapshot*; a coordinator
(a Spark aggregation) merges the latest snapshot of each shard with :func:`merge_snapshots`.

When snapshots are sent:

* by default once at the end of the input (:meth:`~WindowedCountMinOperator.finish`) and,
  on a stream, whenever the watermark moves (:meth:`~WindowedCountMinOperator.advance`: in Spark,
  at most once or twice per micro-batch and shard). The paper's DistCM period of
  ``epsilon * N`` samples (Section 3.5) made Spark jobs 6-10 times slower and, with ``N`` in
  ticks, could snapshot on every sample (issue #16, point 7);
* with ``snapshot_every=s``, also after every ``s`` samples (the paper's protocol:
  ``s = ceil(epsilon * N)`` bounds the coordinator's lag by Theorem 7). These periodic
  snapshots fall at exact sample counts, whatever the cut of the input into batches.

One window for all shards (time-based sketches): a shard's clock is moved to the watermark
(``advance``) and to ``end_time`` (``finish``), not only to its own last row, so every shard's
window ends at the same step and the sum of linear sketches is the sketch of the global
window. The Spark layer runs count-based windows this way too, as ticks of one position each.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from windowkit.core.mergeable import MergeableOperator, MergePlan, Part
from windowkit.core.operator import INPUT_END, StreamOperator
from windowkit.core.registry import register
from windowkit.core.serialization import pack_state, state_decoder, unpack_state
from windowkit.core.sketch_defaults import DEFAULT_DELTA as DEFAULT_DELTA  # re-exported
from windowkit.core.sketch_defaults import DEFAULT_EPSILON as DEFAULT_EPSILON  # re-exported
from windowkit.core.sketches import (
    CountMin,
    PerfectWindowCM,
    ProportionalWindowCM,
    SimpleWindowCM,
    SplitterWindowCM,
)
from windowkit.core.sketches._window import WindowedCountMin
from windowkit.core.sketches.spark_format import spark_count_min_counts
from windowkit.core.validation import check_int

_SKETCHES: dict[str, type[WindowedCountMin]] = {
    cls.FORMAT_TAG: cls
    for cls in (PerfectWindowCM, SimpleWindowCM, ProportionalWindowCM, SplitterWindowCM)
}

ITEM = "item"
"""Name of the input column holding the items (int64 hashes or strings)."""
#: Spark's count_min_sketch takes a confidence ``1 - 2**-depth``, below 1 in a double only up
#: to about 50 rows.
JVM_MAX_DEPTH = 40



@register()
class WindowedCountMinOperator(StreamOperator, MergeableOperator):
    """Feed ``(time, item)`` rows to a windowed Count-Min and emit periodic snapshots.

    Parameters
    ----------
    sketch : WindowedCountMin
        The sketch to drive (its state is the operator's state).
    snapshot_every : int, optional
        Also emit a snapshot after every this many samples (the paper's DistCM cadence is
        ``ceil(epsilon * N)``). Default: snapshots only at the end of the input and when the
        watermark moves.
    tick_micros : int, optional
        Required for ``unit="ticks"`` sketches: the tick length in microseconds; a row's tick is
        ``time // tick_micros``. Not allowed for count-based sketches.
    end_time : int, optional
        Time-based sketches: the time (µs) the input ends at (e.g. the largest time of all
        shards); :meth:`finish` moves the clock to its tick first, so that every shard's
        window ends at the same tick.

    On a bounded input with the default cadence, the time-based Perfect, Simple and
    Proportional sketches are sums of parts (:meth:`merge_plan`): Perfect's state is the rows
    of the last ``N`` ticks, Simple's the counts of the last block of ``N`` ticks,
    Proportional's those of the last two blocks. Simple's and Proportional's block parts are
    Count-Min matrices that Spark's ``count_min_sketch`` aggregate builds cell for cell alike
    when the sketch hashes with Spark's family (``hashing="spark"``).

    Output columns: ``seq`` (snapshot number), ``n_seen`` (samples consumed), ``time`` (time of
    the last consumed sample), ``sketch`` (:meth:`CountMin.to_bytes` of the current cell
    values, mergeable across shards and variants).

    Examples
    --------
    >>> op = WindowedCountMinOperator(ProportionalWindowCM(100, depth=1, width=28),
    ...                               snapshot_every=2)
    >>> out = op.process(pd.DataFrame({"time": [1, 2, 3], "item": ["a", "b", "a"]}))
    >>> out[["seq", "n_seen", "time"]].values.tolist()
    [[0, 2, 2]]
    >>> merge_snapshots(out["sketch"]).estimate(["a"]).tolist()
    [1]
    >>> op.finish()[["seq", "n_seen", "time"]].values.tolist()
    [[1, 3, 3]]
    """

    FORMAT_TAG = "CMOPERAT"
    FORMAT_VERSION = 1

    def __init__(
        self,
        sketch: WindowedCountMin,
        snapshot_every: int | None = None,
        tick_micros: int | None = None,
        end_time: int | None = None,
    ) -> None:
        if not isinstance(sketch, WindowedCountMin):
            msg = f"`sketch` must be a windowed Count-Min sketch; got {type(sketch).__name__}"
            raise ValueError(msg)
        if snapshot_every is not None:
            snapshot_every = check_int("snapshot_every", snapshot_every, 1)
        self.snapshot_every = snapshot_every
        if sketch.unit == "ticks":
            if tick_micros is None:
                msg = "`tick_micros` is required for a sketch with unit='ticks'"
                raise ValueError(msg)
            tick_micros = check_int("tick_micros", tick_micros, 1)
        elif tick_micros is not None:
            msg = "`tick_micros` is only for sketches with unit='ticks'"
            raise ValueError(msg)
        if end_time is not None and tick_micros is None:
            msg = "`end_time` is only for sketches with unit='ticks'"
            raise ValueError(msg)
        self.sketch = sketch
        self.tick_micros = tick_micros
        self.end_time = None if end_time is None else int(end_time)
        self.seq = 0
        self.n_seen = 0
        self.last_time = 0
        # (n_seen, clock) of the last snapshot: a snapshot that would repeat it is not sent
        self._sent: tuple[int, int] | None = None

    @property
    def input_schema(self) -> list[tuple[str, str]]:
        """``item``: the items' int64 keys."""
        return [(ITEM, "int64")]

    @property
    def output_schema(self) -> list[tuple[str, str]]:
        """``seq``, ``n_seen``, ``time`` and ``sketch``."""
        return [("seq", "int64"), ("n_seen", "int64"), ("time", "timestamp"),
                ("sketch", "binary")]

    def _feed(self, items: Any, times: np.ndarray) -> None:
        if len(times) == 0:
            return
        if self.tick_micros is None:
            self.sketch.update(items)
        else:
            self.sketch.update(items, ticks=times // self.tick_micros)
        self.n_seen += len(times)
        self.last_time = int(times[-1])

    def _snapshot(self) -> dict[str, Any]:
        row = {"seq": self.seq, "n_seen": self.n_seen, "time": self.last_time,
               "sketch": self.sketch.to_count_min().to_bytes()}
        self.seq += 1
        self._sent = (self.n_seen, self.sketch.now)
        return row

    def _move_clock(self, time: int) -> bool:
        """Time-based sketches: advance the clock to ``time``'s tick; whether it moved."""
        if self.tick_micros is None:
            return False
        tick = time // self.tick_micros
        if tick <= self.sketch.now:
            return False
        self.sketch.advance_ticks(tick - self.sketch.now)
        self.last_time = max(self.last_time, time)
        return True

    def process(self, batch: pd.DataFrame) -> pd.DataFrame:
        """Consume rows sorted by ``time``; return the periodic snapshots due within them.

        An :data:`~windowkit.core.operator.INPUT_END` column, if present, sets
        ``end_time``."""
        if INPUT_END in batch and len(batch):
            self.end_time = int(batch[INPUT_END].max())
        times = batch["time"].to_numpy().astype(np.int64, copy=False)
        items = batch[ITEM].to_numpy()
        every = self.snapshot_every
        if every is None:
            self._feed(items, times)
            return self.empty_output()
        n = len(times)
        first = every - self.n_seen % every  # 1-based position of the first snapshot
        rows = []
        start = 0
        for stop in range(first, n + 1, every):
            self._feed(items[start:stop], times[start:stop])
            rows.append(self._snapshot())
            start = stop
        self._feed(items[start:], times[start:])
        return self._frame(rows)

    def advance(self, watermark: int) -> pd.DataFrame:
        """No row at or before ``watermark`` will come: move a time-based clock to it and send
        a snapshot if anything changed since the last one (on a stream: per micro-batch)."""
        self._move_clock(watermark)
        if self.n_seen == 0 or self._sent == (self.n_seen, self.sketch.now):
            return self.empty_output()
        return self._frame([self._snapshot()])

    def next_deadline(self) -> int | None:
        """The next tick's start once a sample was seen: a shard that gets no rows in a
        micro-batch still sends the window its clock moved to."""
        if self.tick_micros is None or self.n_seen == 0:
            return None
        return (self.sketch.now + 1) * self.tick_micros

    def finish(self) -> pd.DataFrame:
        """Emit a final snapshot of the current window (at ``end_time``'s tick if given)."""
        if self.end_time is not None:
            self._move_clock(self.end_time)
        return self._frame([self._snapshot()])

    @property
    def ends_with_input(self) -> bool:
        """True: every shard's last window ends at the input's last time (a time-based
        sketch's clock moves there), so the shards' windows are the same and their sum is
        the window of the whole input."""
        return self.tick_micros is not None

    def merge_plan(self) -> MergePlan | None:
        """Perfect's, Simple's and Proportional's time-based state with the default cadence
        is a sum of parts; Splitter's sub-cells and periodic snapshots depend on row order.

        Examples
        --------
        >>> op = WindowedCountMinOperator(SimpleWindowCM(10, depth=1, width=8, unit="ticks",
        ...                                              hashing="spark"), tick_micros=1000)
        >>> plan = op.merge_plan()
        >>> plan.tick, plan.span, plan.lag, plan.aggregate[:2]
        (1000, 10, 0, ('count_min_sketch', 'item'))
        """
        if self.snapshot_every is not None or self.tick_micros is None:
            return None
        window = self.sketch.config.window
        if isinstance(self.sketch, PerfectWindowCM):
            return MergePlan(self.tick_micros, 1, window - 1)
        if isinstance(self.sketch, (SimpleWindowCM, ProportionalWindowCM)):
            lag = 1 if isinstance(self.sketch, ProportionalWindowCM) else 0
            return MergePlan(self.tick_micros, window, lag, self._block_aggregate())
        return None

    def _block_aggregate(self) -> tuple[str, str, tuple[float | int, ...]] | None:
        """Spark's ``count_min_sketch`` arguments that build this sketch's block matrix."""
        config = self.sketch.config
        if config.hashing != "spark" or config.depth > JVM_MAX_DEPTH:
            return None
        # Spark sizes its sketch ceil(2 / eps) x ceil(log2(1 / (1 - confidence))): aim at the
        # middle of the interval that gives this sketch's shape
        eps = 2 / (config.width - 0.5)
        confidence = 1 - 2.0 ** -(config.depth - 0.5)
        return ("count_min_sketch", ITEM, (eps, confidence, config.seed))

    def part(self, batch: pd.DataFrame) -> bytes:
        """The sketch bytes of ``batch``'s ``time`` and ``item`` rows (any order); the
        operator itself is unchanged."""
        times = batch["time"].to_numpy().astype(np.int64, copy=False)
        items = batch[ITEM].to_numpy()
        if np.any(times[1:] < times[:-1]):  # input read in time order needs no sort
            order = np.argsort(times, kind="stable")
            times, items = times[order], items[order]
        sketch = copy.deepcopy(self.sketch)
        sketch.update(items, ticks=times // self.tick_micros)
        return sketch.to_bytes()

    def finish_parts(self, parts: Sequence[Part], rows: int, end: int) -> pd.DataFrame:
        """The final snapshot from one shard's parts (block matrices built by Spark's
        ``count_min_sketch``, or :meth:`part` sketches), its row count, and the input's last
        time; a shard with no part (all its rows before the last blocks) sends its window
        moved to ``end``, empty.

        Examples
        --------
        >>> op = WindowedCountMinOperator(PerfectWindowCM(10, depth=1, width=8, unit="ticks"),
        ...                               tick_micros=1)
        >>> a = op.part(pd.DataFrame({"time": [3, 1], "item": [7, 7]}))
        >>> b = op.part(pd.DataFrame({"time": [2], "item": [5]}))
        >>> out = op.finish_parts([(None, a, 3), (None, b, 2)], rows=3, end=4)
        >>> out[["n_seen", "time"]].values.tolist()
        [[3, 4]]
        >>> merge_snapshots(out["sketch"]).estimate([7, 5]).tolist()
        [2, 1]
        """
        self.n_seen, self.last_time = int(rows), int(end)
        if parts:
            self.last_time = max(int(last) for _, _, last in parts)
            config = self.sketch.config
            blocks = {int(block): spark_count_min_counts(bytes(blob), config)
                      for block, blob, _ in parts if block is not None}
            if blocks:
                self.sketch.load_blocks(self.last_time // self.tick_micros, blocks, self.n_seen)
            sketch_type = type(self.sketch)
            for block, blob, _ in parts:
                if block is None:  # clocks move to the latest part's
                    self.sketch.merge(sketch_type.from_bytes(bytes(blob)))
        self.sketch.n_samples = self.n_seen
        self.end_time = int(end)
        return self.finish()

    def _frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        if not rows:
            return self.empty_output()
        out = pd.DataFrame(rows, columns=[c for c, _ in self.output_schema])
        return out.astype({"seq": "int64", "n_seen": "int64", "time": "int64"})

    def to_bytes(self) -> bytes:
        """Serialize parameters, counters and the sketch."""
        meta = {
            "sketch_tag": self.sketch.FORMAT_TAG,
            "snapshot_every": self.snapshot_every,
            "tick_micros": self.tick_micros,
            "end_time": self.end_time,
            "sent": None if self._sent is None else list(self._sent),
            "seq": self.seq,
            "n_seen": self.n_seen,
            "last_time": self.last_time,
        }
        sketch = np.frombuffer(self.sketch.to_bytes(), dtype=np.uint8)
        return pack_state(self.FORMAT_TAG, self.FORMAT_VERSION, meta, {"sketch": sketch})

    @classmethod
    @state_decoder
    def from_bytes(cls, blob: bytes) -> WindowedCountMinOperator:
        """Rebuild an operator from :meth:`to_bytes` output.

        Examples
        --------
        >>> op = WindowedCountMinOperator(SimpleWindowCM(10, depth=1, width=8), snapshot_every=4)
        >>> WindowedCountMinOperator.from_bytes(op.to_bytes()).snapshot_every
        4
        """
        meta, arrays = unpack_state(blob, cls.FORMAT_TAG, cls.FORMAT_VERSION)
        sketch_cls = _SKETCHES[meta["sketch_tag"]]
        sketch = sketch_cls.from_bytes(arrays["sketch"].tobytes())
        op = cls(sketch, meta["snapshot_every"], meta["tick_micros"], meta.get("end_time"))
        sent = meta.get("sent")
        op._sent = None if sent is None else (int(sent[0]), int(sent[1]))
        op.seq = int(meta["seq"])
        op.n_seen = int(meta["n_seen"])
        op.last_time = int(meta["last_time"])
        return op


def merge_snapshots(blobs: Iterable[bytes]) -> CountMin:
    """Sum snapshot matrices (e.g. the latest of each shard) into one :class:`CountMin`.

    Examples
    --------
    >>> a, b = CountMin(1, 8), CountMin(1, 8)
    >>> a.update([1]); b.update([1, 1])
    >>> merge_snapshots([a.to_bytes(), b.to_bytes()]).estimate([1]).tolist()
    [3]
    """
    total: CountMin | None = None
    for blob in blobs:
        cm = CountMin.from_bytes(blob)
        if total is None:
            total = cm
        else:
            total.merge(cm)
    if total is None:
        msg = "`blobs` must hold at least one snapshot"
        raise ValueError(msg)
    return total
