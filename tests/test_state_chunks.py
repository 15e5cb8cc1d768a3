"""Streaming state in chunks of keys (issue #17): a micro-batch reads and writes only the chunks
its rows, its released rows and its due deadlines touch, and the output is that of one runner
per shard holding every key.

The processor is driven here without Spark, through an in-memory stand-in for Spark's state
handle that counts every chunk read and write; tests/test_spark_state_chunks.py runs it on
Spark.
"""

from __future__ import annotations

import functools
from unittest import mock

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkit.core.chunks import COUNT, chunk_of, decode_chunks, encode_chunks
from windowkit.core.frames import DeltaFramer, ThresholdFramer
from windowkit.core.operator import KEY, TIME
from windowkit.core.persistence.operator import ITEM, PersistentItemsOperator
from windowkit.core.serialization import StateFormatError
from windowkit.spark import chunk_store
from windowkit.spark.adapter import PAYLOAD
from windowkit.spark.chunk_store import ChunkStore, ShardIndex
from windowkit.spark.processor import RunnerProcessor, declare_chunk_states


class _Value:
    def __init__(self, store: dict, name: str) -> None:
        self.store, self.name = store, name

    def get(self):
        return self.store.get(self.name)

    def update(self, value) -> None:
        self.store[self.name] = value

    def clear(self) -> None:
        self.store.pop(self.name, None)


class _Map:
    def __init__(self, handle: FakeHandle) -> None:
        self.handle, self.data = handle, {}

    def getValue(self, key):
        self.handle.reads.append(key[0])
        return self.data.get(key[0])

    def updateValue(self, key, value) -> None:
        self.handle.writes.append(key[0])
        self.data[key[0]] = value

    def removeKey(self, key) -> None:
        self.handle.removes.append(key[0])
        del self.data[key[0]]


class FakeHandle:
    """Spark's StatefulProcessorHandle for one shard, in memory, counting chunk operations."""

    def __init__(self) -> None:
        self.values: dict = {}
        self.map = _Map(self)
        self.timers: set[int] = set()
        self.reset_counts()

    def getValueState(self, name, schema):
        return _Value(self.values, name)

    def getMapState(self, name, key_schema, value_schema):
        assert name == "wk_chunks"
        return self.map

    def listTimers(self):
        return iter(sorted(self.timers))

    def registerTimer(self, ms: int) -> None:
        self.timers.add(ms)

    def deleteTimer(self, ms: int) -> None:
        self.timers.discard(ms)

    def reset_counts(self) -> None:
        self.reads, self.writes, self.removes = [], [], []


class Shard:
    """One shard driven as Spark drives it: per micro-batch the rows with the watermark of
    the batches before, then every timer the watermark has passed."""

    def __init__(self, factory, delay_us: int, shipped: str = "value") -> None:
        from pyspark.sql.streaming.stateful_processor import ExpiredTimerInfo, TimerValues

        self._timer_values, self._expired = TimerValues, ExpiredTimerInfo
        self.processor = RunnerProcessor(factory, [shipped], None, delay_us, [0])
        self.shipped = shipped
        self.handle = FakeHandle()
        self.processor.init(self.handle)
        self.delay_us = delay_us
        self.max_time: int | None = None
        self.out: list[pd.DataFrame] = []

    def watermark_ms(self) -> int:
        if self.max_time is None:
            return 0
        return max(0, (self.max_time - self.delay_us) // 1000)

    def batch(self, rows: pd.DataFrame, elsewhere: int | None = None) -> None:
        """A micro-batch with ``rows`` for this shard; ``elsewhere``: the latest time other
        shards saw in it (the watermark is global)."""
        wm = self.watermark_ms()
        values = self._timer_values(0, wm)
        if len(rows):
            self.out.extend(self.processor.handleInputRows(
                (0,), iter([_packed(rows, self.shipped)]), values))
        tops = [t for t in (elsewhere, self.max_time) if t is not None]
        tops += [int(rows[TIME].max())] if len(rows) else []
        self.max_time = max(tops) if tops else None
        for ms in sorted(t for t in self.handle.timers if t <= wm):
            self.handle.timers.discard(ms)
            self.out.extend(self.processor.handleExpiredTimer((0,), values, self._expired(ms)))

    def index(self) -> ShardIndex | None:
        value = self.handle.values.get("wk_index")
        return None if value is None else ShardIndex.from_bytes(value[0])

    def output(self) -> pd.DataFrame:
        out = pd.concat(self.out, ignore_index=True)
        out = out[out["rejected"].isna()].drop(columns=["rejected", "detail", "shard"])
        return out.sort_values(list(out.columns)).reset_index(drop=True)


def _packed(rows: pd.DataFrame, shipped: str = "value") -> pd.DataFrame:
    table = pa.table({KEY: pa.array(rows[KEY].astype(str)), TIME: pa.array(rows[TIME], pa.int64()),
                      shipped: pa.array(rows[shipped])})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return pd.DataFrame({PAYLOAD: [sink.getvalue().to_pybytes()]})


FRAMER = functools.partial(ThresholdFramer, min_duration="2 rows", schedule=10_000,
                           fragment_every="3 rows")
NO_ROWS = pd.DataFrame({KEY: [], TIME: [], "value": []})


def small_chunks(split_at: int, per_chunk: int, chunk_cost: float = 0.0):
    """Chunks from a handful of keys on, a few keys each, so small tests exercise them; a
    chunk costs nothing by default, so the count is the most chunks for the keys held."""
    return mock.patch.multiple(chunk_store, SPLIT_AT=split_at, KEYS_PER_CHUNK=per_chunk,
                               MIN_CHUNKS=2, CHUNK_COST=chunk_cost)


def keyed_batches(seed: int, n_keys: int, n_batches: int, per_batch: int) -> list[pd.DataFrame]:
    """Reports every 10 ms per key with gaps, a few rows out of order within 5 ms."""
    rng = np.random.default_rng(seed)
    batches, clock = [], 0
    for _ in range(n_batches):
        keys = rng.integers(0, n_keys, per_batch)
        times = clock + np.sort(rng.integers(0, 50_000, per_batch))
        times = times - rng.integers(0, 5_000, per_batch) * (rng.random(per_batch) < 0.1)
        values = rng.integers(-1, 2, per_batch).astype(np.int8)
        batches.append(pd.DataFrame({KEY: [f"k{k}" for k in keys], TIME: times,
                                     "value": values}))
        clock += 50_000
    return batches


def _run(factory, batches, seed, as_float=False, shipped="value"):
    shard = Shard(factory, 5_000, shipped)
    rng = np.random.default_rng(seed)
    for rows in batches:
        rows = rows.assign(value=rows["value"].astype(float)) if as_float else rows
        if rng.random() < 0.3:  # this micro-batch's rows went to other shards
            shard.batch(rows.iloc[:0], int(rows[TIME].max()))
        else:
            shard.batch(rows)
    for _ in range(2):  # the other shards move the watermark on; only timers settle here
        shard.batch(NO_ROWS, shard.max_time + 100_000)
    return shard


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**16), split_at=st.sampled_from([0, 3, 5]),
       per_chunk=st.sampled_from([1, 3, 8]))
def test_chunked_state_gives_the_output_of_one_runner_per_shard(seed, split_at, per_chunk):
    # a key whose frame closed leaves the state: about a third of the 50 keys are held at a
    # time, so the shards split from a few keys on
    batches = keyed_batches(seed, n_keys=50, n_batches=8, per_batch=150)
    single = _run(FRAMER, batches, seed)  # 50 keys never reach the default SPLIT_AT
    assert single.index() is None
    with small_chunks(split_at, per_chunk):
        chunked = _run(FRAMER, batches, seed)
        assert chunked.index() is not None and chunked.index().chunks >= 2
        assert len(single.output()) > 0
        pd.testing.assert_frame_equal(chunked.output(), single.output())


def test_a_sequence_framer_is_chunked_too():
    factory = functools.partial(DeltaFramer, 0.5, schedule=10_000)
    batches = keyed_batches(7, n_keys=40, n_batches=6, per_batch=60)
    single = _run(factory, batches, 7, as_float=True)
    with small_chunks(3, 2):
        chunked = _run(factory, batches, 7, as_float=True)
        assert chunked.index().chunks >= 16
        pd.testing.assert_frame_equal(chunked.output(), single.output())


def item_batches(seed: int, n_items: int, n_batches: int, per_batch: int) -> list[pd.DataFrame]:
    """Items in 1 ms slots, a few of them in most slots (persistent), the others now and then;
    some rows a few ms out of order."""
    rng = np.random.default_rng(seed)
    batches, clock = [], 0
    for _ in range(n_batches):
        frequent = rng.random(per_batch) < 0.4
        items = np.where(frequent, rng.integers(0, 4, per_batch), rng.integers(4, n_items,
                                                                                per_batch))
        times = clock + np.sort(rng.integers(0, 20_000, per_batch))
        times = times - rng.integers(0, 3_000, per_batch) * (rng.random(per_batch) < 0.1)
        batches.append(pd.DataFrame({KEY: "x", TIME: times,
                                     ITEM: [f"i{k}" for k in items]}))
        clock += 20_000
    return batches


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**16), split_at=st.sampled_from([0, 5, 15]),
       per_chunk=st.sampled_from([1, 3, 8]), delta=st.sampled_from([None, 0.05]))
def test_chunked_sliding_persistent_items_give_the_output_of_one_sketch(seed, split_at,
                                                                        per_chunk, delta):
    # items are the keys of state: a chunk not loaded misses slot closes and expiry, which
    # must change nothing (its items were not reportable, and expiry is caught up on load)
    factory = functools.partial(PersistentItemsOperator, 0.5, 0.3, 6, 1_000, delta=delta)
    batches = item_batches(seed, n_items=400, n_batches=8, per_batch=120)
    single = _run(factory, batches, seed, shipped=ITEM)
    assert single.index() is None
    with small_chunks(split_at, per_chunk):
        chunked = _run(factory, batches, seed, shipped=ITEM)
        assert chunked.index() is not None and chunked.index().chunks >= 2
        assert len(single.output()) > 0
        pd.testing.assert_frame_equal(chunked.output(), single.output())


def _step(store: ChunkStore, keys: np.ndarray, time: int) -> ShardIndex | None:
    """One micro-batch of one row per key straight through the store, nothing left buffered."""
    runner, index = store.load(keys, time - 1)
    runner.push(pd.DataFrame({KEY: keys, TIME: np.full(len(keys), time), "value": np.int8(1)}))
    runner.advance(time + 1)
    store.save(runner, index)
    value = store.index_state.get()
    return None if value is None else ShardIndex.from_bytes(value[0])


def test_the_chunk_count_follows_the_keys_a_micro_batch_touches():
    # rent or buy: the count moves to the best one for the keys touched once the model cost
    # lost under the current count, summed over micro-batches, exceeds that of cutting again
    cost, best = chunk_store._batch_cost, chunk_store._best_chunks
    recut_cost = chunk_store._recut_cost
    every = np.array([f"k{k}" for k in range(2560)], dtype=object)
    few = every[[5, 600, 2000]]
    with small_chunks(10, 4, chunk_cost=chunk_store.KEY_COST * 20):
        handle = FakeHandle()
        store = ChunkStore(handle.getValueState("runner", None), *declare_chunk_states(handle),
                           FRAMER)
        first = _step(store, every, 1_000)
        assert first.chunks == best(2560, 2560) == 2
        many = best(2560, 3)
        assert many >= 512
        recut = recut_cost(2, many, 2560)
        lost, expected_at = 0.0, None
        for batch in range(1, 100):
            lost += cost(2, 2560, 3) - cost(many, 2560, 3)
            if lost > recut:
                expected_at = batch
                break
        assert expected_at is not None and expected_at > 1
        for batch in range(1, expected_at):
            handle.reset_counts()
            assert _step(store, few, 1_000 * (batch + 1)).chunks == 2
            assert len(handle.writes) <= 2
        handle.reset_counts()
        index = _step(store, few, 1_000 * (expected_at + 1))
        assert index.chunks == many and index.regret == 0.0 and index.keys == 2560
        # every key lives in exactly its chunk, and only the new chunks exist
        for chunk, value in handle.map.data.items():
            held, _ = decode_chunks([value[0]], FRAMER().key_state()[1])
            assert set(chunk_of(held, many).tolist()) == {chunk}
        keys, _ = decode_chunks([v[0] for v in handle.map.data.values()],
                                FRAMER().key_state()[1])
        assert sorted(keys.tolist()) == sorted(every.tolist())
        handle.reset_counts()
        _step(store, few, 1_000 * (expected_at + 2))  # now a few chunks a micro-batch
        assert 1 <= len(set(handle.reads)) <= 3 and set(handle.writes) == set(handle.reads)
        # every key touched again: back to few chunks by the same rule
        lost, back_at = 0.0, None
        for batch in range(1, 100):
            lost += cost(many, 2560, 2560) - cost(2, 2560, 2560)
            if lost > recut_cost(many, 2, 2560):
                back_at = batch
                break
        counts = [_step(store, every, 1_000 * (expected_at + 3 + b)).chunks
                  for b in range(back_at)]
        assert counts == [many] * (back_at - 1) + [2]


def test_untouched_chunks_are_neither_read_nor_written_issue_17():
    # 3,000 keys held in chunks of about 8, then micro-batches of 3 keys: only the chunks of
    # keys touched so far (their frames' deadlines bring them back) are read or written.
    bridging = functools.partial(FRAMER, missing="satisfying")
    with small_chunks(100, 8):
        shard = Shard(bridging, 5_000)
        # frames open that no deadline settles (absent reports are bridged): the keys stay
        held = pd.DataFrame({KEY: [f"k{k}" for k in range(3000)], TIME: np.arange(3000),
                             "value": np.int8(1)})
        shard.batch(held)
        shard.batch(pd.DataFrame({KEY: ["k0"], TIME: [50_000], "value": np.int8(0)}))
        chunks = shard.index().chunks
        assert chunks >= 256 and len(shard.handle.map.data) > 200
        before = dict(shard.handle.map.data)
        touched = {"k0"}
        for i in range(4):
            shard.handle.reset_counts()
            keys = [f"k{7 * i + j + 1}" for j in range(3)]
            touched.update(keys)
            shard.batch(pd.DataFrame({KEY: keys, TIME: 100_000 * (i + 1) + np.arange(3),
                                      "value": np.int8(1)}))
            allowed = set(chunk_of(np.array(sorted(touched), dtype=object), chunks).tolist())
            assert set(shard.handle.reads) <= allowed
            assert set(shard.handle.writes) <= allowed
            assert 1 <= len(set(shard.handle.reads)) <= len(allowed)
        untouched = [c for c in before if c not in allowed]
        assert len(untouched) > 200
        # the very same stored objects: never rewritten
        assert all(shard.handle.map.data[c] is before[c] for c in untouched)


def test_keys_whose_frames_closed_leave_the_chunks_issue_39():
    # wave w: 40 new keys, rows at t0 and t0 + 10 ms (one frame each, "2 rows"); the report
    # due at t0 + 20 ms is absent, which the watermark shows: the frames close, the keys owe
    # nothing and leave the chunks. The chunks hold the live keys, not every key ever seen.
    with small_chunks(10, 4):
        shard = Shard(FRAMER, 5_000)
        for w in range(5):
            t0 = 100_000 * w
            keys = [f"w{w}k{k}" for k in range(40)]
            shard.batch(pd.DataFrame({KEY: keys * 2, TIME: [t0] * 40 + [t0 + 10_000] * 40,
                                      "value": np.int8(1)}))
            shard.batch(NO_ROWS, t0 + 60_000)  # the watermark passes the first rows
            assert shard.index().keys == 40  # frames open
            shard.batch(NO_ROWS, t0 + 60_000)  # ... then the second rows and the absent report
            assert shard.index().keys == 0 and shard.handle.map.data == {}
        out = shard.output()
        assert (out["status"] == "final").sum() == 5 * 40


def test_state_written_before_chunks_is_read_and_moved_into_chunks():
    # the whole runner in the "runner" value is the layout every earlier windowkit wrote, and
    # a shard with few keys still writes
    batches = keyed_batches(11, n_keys=50, n_batches=6, per_batch=50)
    single, migrated = Shard(FRAMER, 5_000), Shard(FRAMER, 5_000)
    for rows in batches:
        single.batch(rows)
    single.batch(NO_ROWS, single.max_time + 100_000)
    for rows in batches[:3]:
        migrated.batch(rows)
    assert migrated.index() is None and "runner" in migrated.handle.values
    # two to eight keys at a time are held (those whose frames closed leave): split from 2 on
    with small_chunks(1, 1):
        for rows in batches[3:]:
            migrated.batch(rows)
        migrated.batch(NO_ROWS, migrated.max_time + 100_000)
    assert migrated.index().chunks >= 2
    assert len(single.output()) > 0
    pd.testing.assert_frame_equal(migrated.output(), single.output())


@settings(max_examples=30, deadline=None)
@given(keys=st.lists(st.text(max_size=5), unique=True, max_size=40),
       chunks=st.sampled_from([1, 2, 16, 1024]))
def test_chunk_encoding_round_trips(keys, chunks):
    keys = np.array(keys, dtype=object)
    counts = np.arange(len(keys), dtype=np.int64) % 4  # each key's list: 0 to 3 elements
    arrays = {"n": np.arange(len(keys), dtype=np.int64),
              "f": np.arange(2 * len(keys), dtype=np.float64).reshape(-1, 2),
              COUNT: counts, "owner[]": np.repeat(np.arange(len(keys)), counts),
              "at[]": np.arange(int(counts.sum()), dtype=np.int32)}
    ids = chunk_of(keys, chunks)
    blobs = encode_chunks(keys, arrays, ids)
    assert sorted(blobs) == sorted(set(ids.tolist()))
    back_keys, back = decode_chunks(list(blobs.values()), {n: a[:0] for n, a in arrays.items()})
    order = np.argsort(back["n"])
    assert back_keys[order].tolist() == keys.tolist()
    assert (back["f"][order] == arrays["f"]).all()
    # every key's list came back whole, in its order, behind its key
    assert (back[COUNT] == counts[back["n"]]).all()
    assert (back["owner[]"] == np.repeat(back["n"], back[COUNT])).all()
    starts = np.cumsum(counts) - counts
    expected = [arrays["at[]"][starts[k]:starts[k] + counts[k]] for k in back["n"]]
    assert back["at[]"].tolist() == (np.concatenate(expected).tolist() if expected else [])


def test_integer_keys_stay_integers():
    keys = np.array([5, -3, 2**40])
    blobs = encode_chunks(keys, {"n": np.array([1, 2, 3])}, chunk_of(keys, 4))
    back, arrays = decode_chunks(blobs.values(), {"n": np.zeros(0, np.int64)})
    assert back.dtype == np.int64 and sorted(back.tolist()) == sorted(keys.tolist())


def test_damaged_chunks_raise_the_format_error():
    keys = np.array(["a", "b"], dtype=object)
    blob = encode_chunks(keys, {"n": np.array([1, 2])}, np.zeros(2, np.int64))[0]
    template = {"n": np.zeros(0, np.int64)}
    with pytest.raises(StateFormatError):
        decode_chunks([blob[:-3]], template)
    with pytest.raises(StateFormatError, match="another state layout"):
        decode_chunks([blob], {"m": np.zeros(0, np.int64)})
    raw = encode_chunks(keys, {"n": np.array([1, 2])}, np.zeros(2, np.int64))
    assert decode_chunks(raw.values(), template)[0].tolist() == ["a", "b"]
