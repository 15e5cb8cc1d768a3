"""Distinct counts per level (issue #13, point 3): HLL sketches merged along the chain."""

from __future__ import annotations

import datasketches as ds
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkit.core.multigranular import MultiGranularAggregator
from windowkit.core.multigranular.distinct import relative_error
from windowkit.core.operator import EventTimeRunner
from windowkit.core.serialization import StateFormatError, pack_state, unpack_state
from windowkit.reference.multigranular import reference_reports
from windowkit.testing.streams import (
    nested_levels,
    run_in_batches,
    shuffled_within,
    split_frame,
    split_points,
)

BOUNDS = ["key", "level", "window_start", "window_end"]


@st.composite
def streams(draw, origin: int, max_rows: int = 60) -> pd.DataFrame:
    """Rows with items from 40 values and some nulls (not counted)."""
    n = draw(st.integers(0, max_rows))
    keys = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    times = draw(st.lists(st.integers(origin - 3, origin + 70), min_size=n, max_size=n))
    items = draw(st.lists(st.one_of(st.none(), st.integers(0, 39)), min_size=n, max_size=n))
    df = pd.DataFrame({"key": pd.Series(keys, dtype=object),
                       "time": pd.Series(times, dtype="int64"), "value": 1.0,
                       "item": pd.Series(items, dtype=object)})
    return df.sort_values("time", kind="stable").reset_index(drop=True)


def by_bounds(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values(BOUNDS).reset_index(drop=True)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_small_distinct_counts_are_exact_under_any_split(data):
    # under ~2**12 / 16 distinct items a DataSketches HLL keeps the items' hashes: exact
    levels = data.draw(nested_levels())
    origin = data.draw(st.integers(-3, 5))
    report = data.draw(st.sampled_from(["periodic", "continuous"]))
    closed = data.draw(st.sampled_from(["left", "right"]))
    df = data.draw(streams(origin))
    cuts = data.draw(split_points(len(df)))
    got = run_in_batches(lambda: MultiGranularAggregator(
        levels=levels, origin=origin, aggregates=["count"], distinct=True, report=report,
        closed=closed), df, cuts)
    kept = df[df.time >= origin] if closed == "right" else df
    ref = reference_reports(kept, levels, origin, continuous=report == "continuous",
                            closed=closed)
    assert got.duplicated(BOUNDS).sum() == 0
    if not len(ref):
        assert not len(got)
        return
    got, ref = by_bounds(got), by_bounds(ref)
    assert got[BOUNDS].values.tolist() == ref[BOUNDS].values.tolist()
    assert got["count"].tolist() == ref["count"].tolist()
    assert got["distinct"].tolist() == ref["distinct"].tolist()


def port_scan(n: int, seed: int) -> pd.DataFrame:
    """Two sources over 600 s: 'scan' touches ~n destinations, 'web' a few dozen."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, 600_000_000, n))
    src = np.where(rng.random(n) < 0.8, "scan", "web")
    dst = np.where(src == "scan", rng.integers(0, 10**9, n), rng.integers(0, 40, n))
    return pd.DataFrame({"key": src, "time": t, "value": 1.0,
                         "item": [f"10.{d}" for d in dst.tolist()]})


LEVELS = [("10 seconds", "5 seconds"), ("1 minute", "10 seconds"), ("5 minutes", "1 minute")]
MICROS = [(10_000_000, 5_000_000), (60_000_000, 10_000_000), (300_000_000, 60_000_000)]


@pytest.mark.parametrize("precision", [10, 12])
def test_large_distinct_counts_are_within_four_standard_errors(precision):
    df = port_scan(40_000, seed=precision)
    agg = MultiGranularAggregator(levels=LEVELS, aggregates=["count"], distinct=True,
                                  distinct_precision=precision)
    got = by_bounds(pd.concat([agg.process(df), agg.finish()], ignore_index=True))
    ref = by_bounds(reference_reports(df, MICROS))
    assert got[BOUNDS].values.tolist() == ref[BOUNDS].values.tolist()
    exact = ref["distinct"].to_numpy(float)
    assert exact.max() > 10_000  # the widest scans are far into HLL mode
    err = np.abs(got["distinct"].to_numpy(float) - exact) / exact
    assert (err <= 4 * relative_error(precision)).all(), err.max()
    assert (got["distinct"] != ref["distinct"]).any()  # an estimate, not a copy of the truth


def test_order_of_rows_and_prebuilt_sketches_do_not_change_the_estimates():
    # the JVM builds granule sketches in any order (partial aggregates), micro-batches in
    # another: the estimates must not depend on it (HIP would), even in HLL mode
    df = port_scan(20_000, seed=3)
    levels = MICROS
    # the paper's scopes: a granule's cell is at its last instant, g * b0
    raw = MultiGranularAggregator(levels=levels, aggregates=["count"], distinct=True,
                                  closed="right")
    want = by_bounds(pd.concat([raw.process(df), raw.finish()], ignore_index=True))
    b0 = levels[0][1]
    df["g"] = -((-df["time"]) // b0)
    cells = []
    for (key, g), grp in df.groupby(["key", "g"], sort=False):
        sketch = ds.hll_sketch(12, ds.tgt_hll_type.HLL_8)
        for item in reversed(grp["item"].tolist()):  # not the rows' order
            sketch.update(item)
        cells.append({"key": key, "time": g * b0, "cell_n": float(len(grp)),
                      "cell_hll": sketch.serialize_updatable()})
    cells = pd.DataFrame(cells).sort_values("time", kind="stable")
    for c in ("cell_sum", "cell_min", "cell_max", "cell_mean", "cell_m2", "cell_t_mean",
              "cell_t_m2", "cell_tv"):
        cells[c] = 0.0
    pre = MultiGranularAggregator(levels=levels, aggregates=["count"], distinct=True,
                                  closed="right")
    got = by_bounds(pd.concat([pre.process(cells), pre.finish()], ignore_index=True))
    assert (want["distinct"] > 1000).any()
    pd.testing.assert_frame_equal(got[[*BOUNDS, "count", "distinct"]],
                                  want[[*BOUNDS, "count", "distinct"]])
    # and through the event-time runner, rows out of order within the delay
    arrived = shuffled_within(df.drop(columns="g"), 2_000_000, seed=4)
    runner = EventTimeRunner(MultiGranularAggregator(levels=levels, aggregates=["count"],
                                                     distinct=True, closed="right"))
    outs, seen = [], None
    for piece in split_frame(arrived, [5_000, 11_000, 17_000]):
        seen = int(piece["time"].max()) if seen is None else max(seen, int(piece["time"].max()))
        out, late = runner.push(piece, watermark=seen - 2_000_000)
        assert not len(late)
        outs.append(out)
        runner = EventTimeRunner.from_bytes(runner.to_bytes())
    outs.append(runner.finish())
    streamed = by_bounds(pd.concat(outs, ignore_index=True))
    pd.testing.assert_frame_equal(streamed[[*BOUNDS, "count", "distinct"]],
                                  want[[*BOUNDS, "count", "distinct"]])


def test_hand_computed_distinct_counts():
    # levels <2,1>, <4,2>: key k sees a, b at t=1; a at t=2; c, "", None at t=3.
    # tc = 2: level 0 [1, 2] {a, b} = 2; level 1 [1, 2] = 2. tc = 4: level 0 [3, 4] {c} = 1,
    # level 1 [1, 4] {a, b, c} = 3 (the empty string and null are not items).
    agg = MultiGranularAggregator(levels=[(2, 1), (4, 2)], aggregates=["count"],
                                  distinct=True, closed="right")
    rows = pd.DataFrame({"key": "k", "time": [1, 1, 2, 3, 3, 3],
                         "item": ["a", "b", "a", "c", "", None], "value": 0.0})
    out = pd.concat([agg.process(rows), agg.finish()])
    got = {(r.level, r.window_end): (r.count, r.distinct) for r in out.itertuples()}
    assert got[(0, 3)] == (3, 2) and got[(1, 3)] == (3, 2)
    assert got[(0, 5)] == (3, 1) and got[(1, 5)] == (6, 3)


def test_horizon_gives_the_distinct_count_of_the_periodic_report():
    levels = [(3, 1), (12, 3)]
    df = pd.DataFrame({"key": ["a", "b", "a", "a", "b", "a"], "time": [1, 2, 4, 7, 9, 11],
                       "value": 1.0, "item": ["x", "y", "y", "x", "z", "w"]})
    agg = MultiGranularAggregator(levels=levels, distinct=True, closed="right")
    agg.process(df)
    agg.advance(12)
    now = agg.horizon(12).sort_values("key")
    ref = reference_reports(df, levels, closed="right")
    ref = ref[(ref.level == 1) & (ref.window_end == 13)].sort_values("key")
    assert now["distinct"].tolist() == ref["distinct"].tolist() == [3, 2]


def test_sketches_of_idle_keys_are_dropped():
    agg = MultiGranularAggregator(levels=[(2, 1), (4, 2)], distinct=True)
    agg.process(pd.DataFrame({"key": ["a", "b"], "time": [1, 2], "value": 1.0,
                              "item": ["x", "y"]}))
    assert agg._sketches.live == {0, 1}
    agg.process(pd.DataFrame({"key": ["b"], "time": [20], "value": 1.0, "item": ["z"]}))
    # a's rows left every range: a is forgotten, sketches and all; b (an open granule) is
    # the one key held, in slot 0
    assert agg.n_keys == 1 and agg._sketches.live == {0}
    agg.finish()
    assert agg._sketches.live == set()


def test_distinct_parameters_and_input_are_checked():
    with pytest.raises(ValueError,
                       match=r"`distinct_precision` must be an integer in \[4, 21\]; got 3"):
        MultiGranularAggregator(levels=[(2, 1)], distinct=True, distinct_precision=3)
    with pytest.raises(ValueError, match="`distinct` must be True or False"):
        MultiGranularAggregator(levels=[(2, 1)], distinct="dst")
    agg = MultiGranularAggregator(levels=[(2, 1)], distinct=True)
    with pytest.raises(ValueError, match="`distinct` needs an 'item' column"):
        agg.process(pd.DataFrame({"key": "a", "time": [1], "value": [1.0]}))
    with pytest.raises(ValueError, match="`cell_hll` must hold DataSketches HLL sketches"):
        agg.process(pd.DataFrame({"key": "a", "time": [1], "cell_n": [1.0],
                                  "cell_hll": [b"not a sketch"]}))


def test_corrupt_sketch_state_raises_state_format_error():
    agg = MultiGranularAggregator(levels=[(4, 1), (8, 2)], distinct=True)
    agg.process(pd.DataFrame({"key": ["a", "b"], "time": [1, 3], "value": 1.0,
                              "item": ["x", "y"]}))
    again = MultiGranularAggregator.from_bytes(agg.to_bytes())
    assert again._sketches.live == {0, 1}
    meta, arrays = unpack_state(agg.to_bytes(), agg.FORMAT_TAG, agg.FORMAT_VERSION)
    garbled = dict(arrays, hll_bytes=np.full_like(arrays["hll_bytes"], 7))
    with pytest.raises(StateFormatError, match="MultiGranularAggregator state: .*corrupt"):
        MultiGranularAggregator.from_bytes(pack_state(agg.FORMAT_TAG, 2, meta, garbled))
    short = dict(arrays, hll_bytes=arrays["hll_bytes"][:-1])
    with pytest.raises(StateFormatError, match="do not match their index"):
        MultiGranularAggregator.from_bytes(pack_state(agg.FORMAT_TAG, 2, meta, short))
    del arrays["hll_index"]
    with pytest.raises(StateFormatError, match="MultiGranularAggregator state is corrupt"):
        MultiGranularAggregator.from_bytes(pack_state(agg.FORMAT_TAG, 2, meta, arrays))
