"""WindowedCountMinOperator: DistCM snapshots for the Spark adapter (issue 3)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkit.core.sketches import (
    CountMin,
    PerfectWindowCM,
    ProportionalWindowCM,
    SimpleWindowCM,
    SplitterWindowCM,
)
from windowkit.core.sketches.operator import WindowedCountMinOperator, merge_snapshots

SKETCHES = (PerfectWindowCM, SimpleWindowCM, ProportionalWindowCM, SplitterWindowCM)


def frame(items, start=0):
    return pd.DataFrame({"time": np.arange(start, start + len(items), dtype=np.int64) * 1000,
                         "item": np.asarray(items, dtype=np.int64)})


def run(op, df, cuts):
    outs = []
    bounds = [0, *cuts, len(df)]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        outs.append(op.process(df.iloc[a:b].reset_index(drop=True)))
    outs.append(op.finish())
    return pd.concat(outs, ignore_index=True)


@pytest.mark.parametrize("cls", SKETCHES)
@settings(max_examples=25, deadline=None, derandomize=True)
@given(items=st.lists(st.integers(0, 20), max_size=150),
       cuts=st.lists(st.integers(0, 150), max_size=5))
def test_snapshots_are_batch_split_invariant(cls, items, cuts):
    df = frame(items)
    cuts = sorted(c for c in cuts if c <= len(items))
    whole = run(WindowedCountMinOperator(cls(40, depth=2, width=7), snapshot_every=9), df, [])
    split = run(WindowedCountMinOperator(cls(40, depth=2, width=7), snapshot_every=9), df, cuts)
    pd.testing.assert_frame_equal(whole, split)
    assert whole["n_seen"].tolist()[:-1] == list(range(9, len(items) + 1, 9))
    assert whole["seq"].tolist() == list(range(len(whole)))


def test_snapshot_content_time_and_paper_period():
    sketch = PerfectWindowCM.from_error(0.01, 0.5, window=1000)
    every = math.ceil(sketch.epsilon * 1000)
    op = WindowedCountMinOperator(sketch, snapshot_every=every)
    items = np.arange(25) % 4
    out = op.process(frame(items))
    assert out["n_seen"].tolist() == [every * k for k in (1, 2)]
    assert out["time"].tolist() == [(n - 1) * 1000 for n in out["n_seen"]]
    assert out.dtypes["time"] == np.int64
    last = CountMin.from_bytes(out["sketch"].iloc[-1])
    ref = CountMin(sketch.depth, sketch.width)
    ref.update(items[: out["n_seen"].iloc[-1]])
    assert np.array_equal(last.counts, ref.counts)
    assert list(out.columns) == [c for c, _ in op.output_schema]


def test_default_cadence_is_one_snapshot_at_the_end_issue16():
    # The paper's period ceil(eps N) made Spark jobs 6-10x slower and, with N in ticks, sent
    # a snapshot per sample: by default a shard sends one snapshot when its input ends.
    op = WindowedCountMinOperator(SimpleWindowCM(7, depth=1, width=16, unit="ticks"),
                                  tick_micros=86_400_000_000)  # N = 7 days
    day = 86_400_000_000
    times = np.arange(2000, dtype=np.int64) * day // 100
    assert op.process(pd.DataFrame({"time": times, "item": times % 5})).empty
    out = op.finish()
    assert out["seq"].tolist() == [0] and out["n_seen"].tolist() == [2000]


def test_advance_and_end_time_move_the_clock_of_every_shard_issue16():
    # Two shards of one stream of ticks (one tick = one position): each shard's window must end
    # at the global last step, not at its own last row, for the sum to be the global window.
    rng = np.random.default_rng(3)
    items = rng.integers(0, 6, 300)
    shard_of = rng.integers(0, 2, 300)
    ends = []
    for finish_at_end in (True, False):
        blobs = []
        for shard in (0, 1):
            rows = np.flatnonzero(shard_of == shard)
            op = WindowedCountMinOperator(PerfectWindowCM(50, depth=1, width=64, unit="ticks"),
                                          tick_micros=1, end_time=299 if finish_at_end else None)
            op.process(pd.DataFrame({"time": rows.astype(np.int64), "item": items[rows]}))
            out = op.finish() if finish_at_end else op.advance(299)
            assert len(out) == 1 and op.advance(299).empty  # nothing new: no repeat
            blobs.append(out["sketch"].iloc[-1])
        ends.append(merge_snapshots(blobs).counts)
    ref = CountMin(1, 64)
    ref.update(items[-50:])
    for counts in ends:
        assert np.array_equal(counts, ref.counts)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(items=st.lists(st.integers(0, 20), min_size=1, max_size=120),
       cuts=st.lists(st.integers(0, 120), max_size=4))
def test_default_cadence_is_batch_split_invariant_with_a_round_trip(items, cuts):
    df = frame(items)
    cuts = sorted(c for c in cuts if c <= len(items))

    def make():
        return WindowedCountMinOperator(ProportionalWindowCM(30, depth=2, width=7,
                                                             unit="ticks"), tick_micros=1000)

    whole = run(make(), df, [])
    op = make()
    bounds = [0, *cuts, len(df)]
    outs = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        outs.append(op.process(df.iloc[a:b].reset_index(drop=True)))
        op = WindowedCountMinOperator.from_bytes(op.to_bytes())
    outs.append(op.finish())
    pd.testing.assert_frame_equal(whole, pd.concat(outs, ignore_index=True))
    assert whole["seq"].tolist() == [0]


def test_coordinator_merges_latest_snapshot_of_each_shard():
    rng = np.random.default_rng(0)
    shards = [rng.integers(0, 50, 400) for _ in range(3)]
    latest = []
    for items in shards:
        op = WindowedCountMinOperator(PerfectWindowCM(100, depth=2, width=30, seed=4))
        op.process(frame(items))
        latest.append(op.finish()["sketch"].iloc[-1])
    merged = merge_snapshots(latest)
    ref = CountMin(2, 30, seed=4)
    ref.update(np.concatenate([s[-100:] for s in shards]))
    assert np.array_equal(merged.counts, ref.counts)


def test_time_based_operator_and_string_items():
    op = WindowedCountMinOperator(SimpleWindowCM(10, depth=1, width=64, unit="ticks"),
                                  snapshot_every=2, tick_micros=1_000_000)
    df = pd.DataFrame({"time": np.array([0, 1, 12, 13], dtype=np.int64) * 1_000_000,
                       "item": ["a", "b", "a", "a"]})
    out = op.process(df)
    assert op.sketch.now == 13
    assert CountMin.from_bytes(out["sketch"].iloc[-1]).estimate(["a"]).tolist() == [2]


def test_state_round_trip_resumes_identically():
    items = np.random.default_rng(1).integers(0, 9, 60)
    a = WindowedCountMinOperator(SplitterWindowCM(30, depth=1, width=5), snapshot_every=7)
    a.process(frame(items[:25]))
    b = WindowedCountMinOperator.from_bytes(a.to_bytes())
    pd.testing.assert_frame_equal(a.process(frame(items[25:], 25)),
                                  b.process(frame(items[25:], 25)))


def test_operator_errors():
    with pytest.raises(ValueError, match="`tick_micros` is required"):
        WindowedCountMinOperator(SimpleWindowCM(10, depth=1, width=4, unit="ticks"))
    with pytest.raises(ValueError, match="`tick_micros` is only for"):
        WindowedCountMinOperator(SimpleWindowCM(10, depth=1, width=4), tick_micros=5)
    with pytest.raises(ValueError, match=r"`snapshot_every` must be an integer in \[1, inf\)"):
        WindowedCountMinOperator(SimpleWindowCM(10, depth=1, width=4), snapshot_every=0)
    with pytest.raises(ValueError, match="`sketch` must be a windowed"):
        WindowedCountMinOperator(CountMin(1, 4))
    with pytest.raises(ValueError, match="checksum"):
        blob = bytearray(WindowedCountMinOperator(SimpleWindowCM(3, depth=1, width=2)).to_bytes())
        blob[-1] ^= 1
        WindowedCountMinOperator.from_bytes(bytes(blob))


def test_splitter_with_many_samples_per_tick_expires_them_issue16():
    # `windowkit countmin --unit ticks --tick "1 day"` with Splitter: samples of one tick used
    # to become one sub-cell each, expiring one tick after another, so a 7-day window still
    # counted 20 days. A sub-cell now spans at least one tick.
    rng = np.random.default_rng(1)
    items = rng.choice(3, 3000, p=[0.6, 0.3, 0.1])
    days = np.sort(rng.integers(0, 20, 3000))
    splitter = SplitterWindowCM.from_error(0.01, 0.25, window=7, unit="ticks")
    splitter.update(items, ticks=days)
    truth = np.bincount(items[days > days.max() - 7], minlength=3)
    est = splitter.estimate([0, 1, 2])
    assert (np.abs(est - truth) <= 0.1 * truth + 5).all(), (est, truth)
