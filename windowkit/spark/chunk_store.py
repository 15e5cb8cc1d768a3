"""A shard's streaming state in chunks of keys: a micro-batch reads and writes what it touches.

A shard of the Spark adapter runs one :class:`~windowkit.core.operator.EventTimeRunner` over
many keys. For a ``KEY_PARTITIONED`` operator its state lives in three state variables of
``transformWithStateInPandas``:

* ``runner`` (ValueState): the runner without its operator's keys: watermark, late count and
  the rows waiting for the watermark (their number follows the input rate and the watermark
  delay, not the keys held). While a shard holds few keys (``SPLIT_AT``) its keys stay here
  too, the layout of every checkpoint written before chunks, which is read as it is;
* ``wk_chunks`` (MapState): chunk number -> the keys of that chunk and their state
  (:mod:`windowkit.core.chunks`);
* ``wk_index`` (ValueState): the chunk count, the keys held, the chunks whose keys have a
  deadline (a watermark at which the operator settles output without a row), with it, and the
  cost the chunk count has lost so far (below).

The chunk count is a power of two between ``MIN_CHUNKS`` and one chunk per ``KEYS_PER_CHUNK``
keys. Which is best depends on how many keys a micro-batch touches: a few keys out of millions
want many small chunks (little is read and rewritten besides them), a micro-batch touching
every key wants few large ones (each chunk costs state calls and a codec pass of its own). A
cost model (``CHUNK_COST``, ``KEY_COST``) prices each micro-batch under the current count and
under the best one for its touched keys; when the difference summed since the last change
exceeds what cutting the state again costs, every chunk is read and cut again to the best
count (the rent-or-buy rule: at most about twice the cost of knowing the future). The count
depends only on the input, never on a clock, so it is the same on every run.

A micro-batch loads the chunks of its rows' keys, of the buffered rows its watermark releases
and of the due deadlines, runs the operator once over them, and writes back only those. A chunk
that is not loaded does not see the micro-batch's watermark, which changes nothing: its
deadline lies beyond that watermark, so the operator's ``advance`` would settle none of its
keys. Reads and writes are pipelined (:mod:`windowkit.spark.state_calls`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from windowkit.core.chunks import chunk_of, decode_chunks, encode_chunks
from windowkit.core.operator import TIME, EventTimeRunner, StreamOperator
from windowkit.core.ordering import factorize_keys
from windowkit.core.serialization import (
    compress_state,
    decompress_state,
    pack_state,
    state_decoder,
    unpack_state,
)
from windowkit.spark.state_calls import get_many, remove_many, update_many

NO_DEADLINE = np.iinfo(np.int64).max
#: A shard keeps its keys in the ``runner`` value up to this many keys: one read and one write
#: a micro-batch, as cheap as it gets for a small state.
SPLIT_AT = 4096
#: Fewest keys a chunk holds on average, once split (the most chunks a shard has).
KEYS_PER_CHUNK = 64
#: Fewest chunks a split shard has.
MIN_CHUNKS = 64
#: Seconds a micro-batch spends per chunk it touches: two state calls (about 0.1 ms each,
#: pipelined) and the chunk's codec pass (about 0.05 ms), on Spark local mode.
CHUNK_COST = 250e-6
#: Seconds a micro-batch spends per key of the chunks it loads: decoded, indexed by the
#: operator, hashed and encoded again.
KEY_COST = 3e-6


@dataclass
class ShardIndex:
    """The ``wk_index`` value: chunk count, keys held, and the chunks with a deadline.

    Examples
    --------
    >>> index = ShardIndex(chunks=64, keys=300, deadlines={3: 5_000}, regret=0.5)
    >>> back = ShardIndex.from_bytes(index.to_bytes())
    >>> back.chunks, back.keys, back.due(4_999), back.due(5_000), back.earliest(), back.regret
    (64, 300, [], [3], 5000, 0.5)
    """

    FORMAT_TAG = "WKSHARD"
    FORMAT_VERSION = 1

    chunks: int
    keys: int
    deadlines: dict[int, int]
    #: Model seconds lost to the chunk count since it last changed (see the module docstring).
    regret: float = 0.0

    def due(self, watermark: int | None) -> list[int]:
        """Chunks whose deadline ``watermark`` reaches."""
        if watermark is None:
            return []
        return sorted(c for c, d in self.deadlines.items() if d <= watermark)

    def earliest(self) -> int | None:
        """The earliest deadline of any chunk."""
        return min(self.deadlines.values(), default=None)

    def to_bytes(self) -> bytes:
        """Serialize the index."""
        chunks = np.fromiter(self.deadlines, dtype=np.int64, count=len(self.deadlines))
        due = np.fromiter(self.deadlines.values(), dtype=np.int64, count=len(self.deadlines))
        return compress_state(pack_state(
            self.FORMAT_TAG, self.FORMAT_VERSION,
            {"chunks": self.chunks, "keys": self.keys, "regret": self.regret},
            {"chunk": chunks, "deadline": due}))

    @classmethod
    @state_decoder
    def from_bytes(cls, blob: bytes) -> ShardIndex:
        """Rebuild an index from :meth:`to_bytes` output."""
        meta, arrays = unpack_state(decompress_state(blob), cls.FORMAT_TAG, cls.FORMAT_VERSION)
        deadlines = dict(zip(arrays["chunk"].tolist(), arrays["deadline"].tolist(), strict=True))
        return cls(int(meta["chunks"]), int(meta["keys"]), deadlines, float(meta["regret"]))


def stored_runner(runner_state, factory) -> EventTimeRunner:
    """The runner in the ``runner`` value, or a fresh one over ``factory()`` if there is none
    (one round trip to the JVM: ``exists()`` would be another)."""
    stored = runner_state.get()
    if stored is not None:
        return EventTimeRunner.from_bytes(decompress_state(stored[0]))
    return EventTimeRunner(factory())


class ChunkStore:
    """Load and save the runner of a shard whose operator is ``KEY_PARTITIONED``.

    Parameters
    ----------
    runner_state : ValueState
        The adapter's ``runner`` value.
    index_state, chunk_state : ValueState, MapState
        The shard's index and its chunks, as
        :func:`~windowkit.spark.processor.declare_chunk_states` declares them in ``init``.
    factory : callable
        Builds a fresh operator (the template of the chunks' layout).
    """

    def __init__(self, runner_state, index_state, chunk_state, factory) -> None:
        self.runner_state = runner_state
        self.index_state = index_state
        self.chunk_state = chunk_state
        self.factory = factory
        fresh = factory()
        self.template = fresh.key_state()[1]
        #: The rows' column naming the key of state.
        self.key_column = fresh.CHUNK_KEY
        #: Chunks read and written by the last :meth:`save` (tests count them).
        self.last_read: list[int] = []
        self.last_written: list[int] = []
        self._loaded = 0  # keys the chunks read by load() held

    def load(self, keys, watermark: int | None) -> tuple[EventTimeRunner, ShardIndex | None]:
        """The shard's runner holding the keys a micro-batch needs: those of ``keys`` (its
        rows' :attr:`key_column`), of the buffered rows ``watermark`` releases and of the
        deadlines it reaches."""
        runner = stored_runner(self.runner_state, self.factory)
        value = self.index_state.get()
        index = ShardIndex.from_bytes(value[0]) if value is not None else None
        self.last_read, self._loaded, self._touched = [], 0, 0
        if index is None:
            return runner, None
        needed = [factorize_keys(keys)[1]] if len(keys) else []
        buffer = runner._buffer
        if buffer is not None and len(buffer) and watermark is not None:
            released = buffer[self.key_column][buffer[TIME].to_numpy() <= watermark]
            needed.append(factorize_keys(released)[1])
        wanted = set(index.due(watermark))
        for distinct in needed:
            self._touched += len(distinct)
            wanted.update(np.unique(chunk_of(distinct, index.chunks, unique=True)).tolist())
        self._read(runner.operator, index, sorted(wanted))
        return runner, index

    def save(self, runner: EventTimeRunner, index: ShardIndex | None) -> int | None:
        """Write the runner back (its keys into their chunks once the shard is split);
        return the event time of the shard's next timer, if any."""
        operator = runner.operator
        keys, arrays = operator.key_state()
        held = len(keys) if index is None else index.keys - self._loaded + len(keys)
        self.last_written = []
        if index is None and held <= SPLIT_AT:
            self.runner_state.update((compress_state(runner.to_bytes()),))
            self.index_state.clear()
            return runner.next_timer()
        touched = self._touched if index is not None else len(keys)
        chunks = _best_chunks(held, touched)
        if index is not None and chunks != index.chunks:
            index.regret += (_batch_cost(index.chunks, held, touched)
                             - _batch_cost(chunks, held, touched))
            if index.regret <= _recut_cost(index.chunks, chunks, held):
                chunks = index.chunks
        if index is None or chunks != index.chunks:  # first split, or a new chunk count
            stale = set()
            if index is not None:
                unread = sorted(set(range(index.chunks)) - set(self.last_read))
                self._read(operator, index, unread, keep=True)
                keys, arrays = operator.key_state()
                stale = set(self.last_read)  # every chunk that exists
            index = ShardIndex(chunks, len(keys), {})
        else:
            stale = set(self.last_read)
            index.keys = held
        ids = chunk_of(keys, chunks, unique=True)
        blobs = encode_chunks(keys, arrays, ids)
        update_many(self.chunk_state, [((c,), (blob,)) for c, blob in blobs.items()])
        remove_many(self.chunk_state, [(c,) for c in sorted(stale - set(blobs))])
        for c in stale | set(blobs):
            index.deadlines.pop(c, None)
        deadlines = operator.key_deadlines(arrays)
        if deadlines is not None and len(keys):
            has = deadlines != NO_DEADLINE
            earliest = np.full(chunks, NO_DEADLINE, dtype=np.int64)
            np.minimum.at(earliest, ids[has], deadlines[has])
            due = np.flatnonzero(earliest != NO_DEADLINE)
            index.deadlines.update(zip(due.tolist(), earliest[due].tolist(), strict=True))
        self.last_written = sorted(blobs)
        # the runner keeps what is not per key: its own buffer and watermark, and the
        # operator's state without its keys (e.g. the open slot of persistent items)
        operator.load_key_state(keys[:0], {name: a[:0] for name, a in arrays.items()})
        self.runner_state.update((compress_state(runner.to_bytes()),))
        self.index_state.update((index.to_bytes(),))
        candidates = [t for t in (runner.next_timer(), index.earliest()) if t is not None]
        return min(candidates) if candidates else None

    def _read(self, operator: StreamOperator, index: ShardIndex, chunks: list[int],
              keep: bool = False) -> None:
        """Load ``chunks`` into ``operator`` (adding to its keys if ``keep``)."""
        values = get_many(self.chunk_state, [(c,) for c in chunks])
        found = [c for c, v in zip(chunks, values, strict=True) if v is not None]
        blobs = [v[0] for v in values if v is not None]
        self.last_read = sorted(set(self.last_read) | set(found)) if keep else found
        held_keys, held_arrays = operator.key_state() if keep else (None, None)
        keys, arrays = decode_chunks(blobs, self.template)
        if keep and len(held_keys):
            keys = np.concatenate([held_keys, keys]) if keys.dtype == held_keys.dtype else \
                np.concatenate([held_keys.astype(object), keys.astype(object)])
            arrays = {n: np.concatenate([held_arrays[n], arrays[n]]) for n in arrays}
        operator.load_key_state(keys, arrays)
        if not keep:
            self._loaded = len(keys)


def _batch_cost(chunks: int, keys: int, touched: int) -> float:
    """Model seconds of a micro-batch touching ``touched`` of ``keys`` keys in ``chunks``
    chunks, the touched keys falling into the chunks at random."""
    hit = chunks * -math.expm1(-touched / chunks)  # expected chunks touched
    return hit * (CHUNK_COST + keys / chunks * KEY_COST)


def _recut_cost(chunks: int, new_chunks: int, keys: int) -> float:
    """Model seconds of reading every chunk of ``chunks`` and writing ``new_chunks`` anew
    (half a chunk's cost each way) with ``keys`` keys."""
    return (chunks + new_chunks) * CHUNK_COST / 2 + keys * KEY_COST


def _best_chunks(keys: int, touched: int) -> int:
    """The chunk count of least model cost for a micro-batch touching ``touched`` of ``keys``
    keys: a power of two from ``MIN_CHUNKS`` to about one chunk per ``KEYS_PER_CHUNK`` keys.

    Examples
    --------
    >>> _best_chunks(5_000_000, 500), _best_chunks(5_000_000, 5_000_000)
    (131072, 64)
    """
    best, chunks = MIN_CHUNKS, MIN_CHUNKS
    while keys > chunks * KEYS_PER_CHUNK:
        chunks *= 2
        if _batch_cost(chunks, keys, touched) < _batch_cost(best, keys, touched):
            best = chunks
    return best
