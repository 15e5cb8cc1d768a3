"""Multi-granular windows (issue #13): core operator against the brute-force reference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkit.core.multigranular import (
    CELL_COLUMNS,
    MultiGranularAggregator,
    MultiGranularSpec,
    RecurringItems,
)
from windowkit.core.operator import EventTimeRunner
from windowkit.core.serialization import StateFormatError
from windowkit.reference.multigranular import reference_recurring, reference_reports
from windowkit.testing.streams import (
    nested_levels,
    run_in_batches,
    shuffled_within,
    split_frame,
    split_points,
)

ALL = ("count", "sum", "mean", "min", "max", "variance", "stddev")
BOUNDS = ["key", "level", "window_start", "window_end"]


@st.composite
def streams(draw, origin: int, with_items: bool = False, max_rows: int = 40) -> pd.DataFrame:
    n = draw(st.integers(0, max_rows))
    keys = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    times = draw(st.lists(st.integers(origin - 3, origin + 70), min_size=n, max_size=n))
    values = draw(st.lists(st.integers(-9, 9), min_size=n, max_size=n))
    df = pd.DataFrame({"key": pd.Series(keys, dtype=object),
                       "time": pd.Series(times, dtype="int64"),
                       "value": pd.Series(values, dtype="float64") / 4})
    if with_items:
        items = draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=n, max_size=n))
        df["item"] = pd.Series(items, dtype=object)
    return df.sort_values("time", kind="stable").reset_index(drop=True)


def assert_same_reports(got: pd.DataFrame, ref: pd.DataFrame, columns: list[str]) -> None:
    assert got.duplicated(BOUNDS).sum() == 0
    if not len(ref):
        assert not len(got)
        return
    got = got.sort_values(BOUNDS).reset_index(drop=True)
    ref = ref.sort_values(BOUNDS).reset_index(drop=True)
    assert got[BOUNDS].values.tolist() == ref[BOUNDS].values.tolist()
    for col in columns:
        np.testing.assert_allclose(got[col].to_numpy(float), ref[col].to_numpy(float),
                                   rtol=1e-9, atol=1e-9, err_msg=col)


@settings(max_examples=50, deadline=None)
@given(st.data())
def test_aggregates_match_reference_under_any_split(data):
    levels = data.draw(nested_levels())
    origin = data.draw(st.integers(-3, 5))
    closed = data.draw(st.sampled_from(["left", "right"]))
    weights = data.draw(st.lists(st.floats(0, 2), min_size=len(levels), max_size=len(levels)))
    df = data.draw(streams(origin))
    cuts = data.draw(split_points(len(df)))
    got = run_in_batches(lambda: MultiGranularAggregator(levels=levels, origin=origin,
                                                    aggregates=ALL, regression=True,
                                                    weights=weights, closed=closed), df, cuts)
    # the paper's scopes hold no row before the origin; window()'s windows only align on it
    kept = df[df.time >= origin] if closed == "right" else df
    ref = reference_reports(kept, levels, origin, weights=weights, closed=closed)
    cols = [*ALL, "decayed_sum", "decayed_count"]
    assert_same_reports(got, ref, cols)
    if len(ref):
        # regression: against numpy's least squares on the same points
        got = got.sort_values(BOUNDS).reset_index(drop=True)
        ref = ref.sort_values(BOUNDS).reset_index(drop=True)
        for (rel, v), slope, intercept in zip(ref["points"], got["slope"], got["intercept"],
                                               strict=True):
            if len(np.unique(rel)) < 2:
                assert np.isnan(slope) and np.isnan(intercept)
                continue
            design = np.column_stack([rel, np.ones_like(rel)])
            (s, i), *_ = np.linalg.lstsq(design, v, rcond=None)
            assert slope == pytest.approx(s, rel=1e-6, abs=1e-6)
            assert intercept == pytest.approx(i, rel=1e-6, abs=1e-6)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_recurring_items_match_reference_under_any_split(data):
    levels = data.draw(nested_levels())
    origin = data.draw(st.integers(-3, 5))
    closed = data.draw(st.sampled_from(["left", "right"]))
    df = data.draw(streams(origin, with_items=True))
    cuts = data.draw(split_points(len(df)))
    got = run_in_batches(lambda: RecurringItems(levels=levels, origin=origin, closed=closed),
                         df, cuts)
    kept = df[df.time >= origin] if closed == "right" else df
    ref = reference_recurring(kept, levels, origin, closed=closed)
    key = [*BOUNDS, "item"]
    got = got.sort_values(key).reset_index(drop=True)
    ref = ref.sort_values(key).reset_index(drop=True)
    assert got[[*key, "count"]].values.tolist() == ref[[*key, "count"]].values.tolist()


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_continuous_reporting_matches_reference(data):
    levels = data.draw(nested_levels(max_levels=3))
    closed = data.draw(st.sampled_from(["left", "right"]))
    df = data.draw(streams(0, max_rows=25))
    df = df[df.time >= 0] if closed == "right" else df
    got = run_in_batches(lambda: MultiGranularAggregator(levels=levels, report="continuous",
                                                         closed=closed),
                         df, data.draw(split_points(len(df))))
    ref = reference_reports(df, levels, continuous=True, closed=closed)
    assert_same_reports(got, ref, ["count", "sum", "min", "max"])


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_event_time_runner_with_disorder_matches_reference(data):
    levels = data.draw(nested_levels(max_levels=3))
    df = data.draw(streams(0, max_rows=30))
    delay = 6
    arrived = shuffled_within(df, delay, seed=data.draw(st.integers(0, 99)))
    runner = EventTimeRunner(MultiGranularAggregator(levels=levels, aggregates=ALL))
    outs = []
    seen = None
    for piece in split_frame(arrived, data.draw(split_points(len(arrived)))):
        if len(piece):
            top = int(piece["time"].max())
            seen = top if seen is None else max(seen, top)
        out, late = runner.push(piece, watermark=None if seen is None else seen - delay)
        assert not len(late)
        outs.append(out)
        runner = EventTimeRunner.from_bytes(runner.to_bytes())
    outs.append(runner.finish())
    got = pd.concat(outs, ignore_index=True)
    assert_same_reports(got, reference_reports(df, levels), list(ALL))


def test_paper_figure_4_recurring_items():
    # W0 = <4,1>, W1 = <8,2>, W2 = <16,4>; at tc = 16 all levels slide:
    # D0 = [13, 16], D1 = [9, 12], D2 = [1, 8]. Item 4 occurs in each, item 7 misses D1.
    rows = pd.DataFrame({"key": "s", "time": [2, 5, 10, 14, 3, 15, 16],
                         "item": [4, 4, 4, 4, 7, 7, 7]})
    rec = RecurringItems(levels=[(4, 1), (8, 2), (16, 4)], closed="right")
    out = pd.concat([rec.process(rows.sort_values("time")), rec.finish()])
    at_16 = out[(out.window_end == 17) & (out.level == 2)]
    assert at_16[["item", "count"]].values.tolist() == [["4", 4]]
    level0 = out[(out.window_end == 17) & (out.level == 0)]
    assert sorted(level0["item"]) == ["4", "7"]


def test_hand_computed_aggregates_and_regression():
    # levels <4,1>, <8,2>; rows (t, v) = (5, 1), (6, 3), (8, 5): at tc = 8 level 1's scope is
    # [1, 8]: count 3, sum 9, min 1, max 5; slope by hand: t - 8 = -3, -2, 0 (µs), mean -5/3,
    # v mean 3; Stv = (-4/3)(-2) + (-1/3)(0) + (5/3)(2) = 6, Stt = 16/9 + 1/9 + 25/9 = 42/9.
    agg = MultiGranularAggregator(levels=[(4, 1), (8, 2)], aggregates=ALL, regression=True,
                                  closed="right")
    rows = pd.DataFrame({"key": "k", "time": [5, 6, 8], "value": [1.0, 3.0, 5.0]})
    out = pd.concat([agg.process(rows), agg.finish()])
    row = out[(out.level == 1) & (out.window_end == 9)].iloc[0]
    assert (row["count"], row["sum"], row["min"], row["max"]) == (3, 9.0, 1.0, 5.0)
    slope_per_us = 6 / (42 / 9)
    assert row["slope"] == pytest.approx(slope_per_us * 1e6)
    assert row["intercept"] == pytest.approx(3 - slope_per_us * (-5 / 3))
    assert row["variance"] == pytest.approx(np.var([1, 3, 5], ddof=1))


def test_horizon_equals_periodic_report_when_the_level_slides():
    levels = [(3, 1), (12, 3)]
    df = pd.DataFrame({"key": ["a", "b", "a", "a", "b", "a"], "time": [1, 2, 4, 7, 9, 11],
                       "value": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    agg = MultiGranularAggregator(levels=levels, closed="right")
    _ = agg.process(df)
    _ = agg.advance(12)  # tc = 12: level 1 slides
    now = agg.horizon(12).sort_values("key")
    ref = reference_reports(df, levels, closed="right")
    ref = ref[(ref.level == 1) & (ref.window_end == 13)].sort_values("key")
    assert now["key"].tolist() == ref["key"].tolist()
    assert now["sum"].tolist() == ref["sum"].tolist()
    assert now["count"].tolist() == ref["count"].tolist()


def test_rows_before_origin_are_counted_not_reported():
    agg = MultiGranularAggregator(levels=[(2, 1)], origin=10, closed="right")
    out = pd.concat([agg.process(pd.DataFrame({"key": "a", "time": [5, 10, 11],
                                               "value": [1.0, 2.0, 3.0]})), agg.finish()])
    assert agg.before_origin == 1
    assert out["window_start"].min() == 10


def test_rows_going_backwards_are_refused():
    agg = MultiGranularAggregator(levels=[(2, 1)])
    agg.process(pd.DataFrame({"key": "a", "time": [5, 9], "value": [1.0, 2.0]}))
    with pytest.raises(ValueError, match="went backwards"):
        agg.process(pd.DataFrame({"key": "a", "time": [7], "value": [1.0]}))


def test_pre_aggregated_cells_give_the_same_reports():
    levels = [(4, 1), (12, 2)]
    rng = np.random.default_rng(3)
    t = np.sort(rng.integers(0, 60, 200))
    df = pd.DataFrame({"key": rng.choice(["a", "b"], 200), "time": t,
                       "value": rng.normal(size=200)})
    raw = MultiGranularAggregator(levels=levels, aggregates=ALL, regression=True)
    want = pd.concat([raw.process(df), raw.finish()])
    # one cell per (key, granule): moments relative to the granule's end instant
    df["g"] = df["time"]  # b0 = 1: granule = instant
    cells = df.groupby(["key", "g"]).agg(
        cell_n=("value", "size"), cell_sum=("value", "sum"), cell_min=("value", "min"),
        cell_max=("value", "max"), cell_mean=("value", "mean"),
        cell_m2=("value", lambda v: float(((v - v.mean()) ** 2).sum()))).reset_index()
    cells["cell_t_mean"] = cells["cell_t_m2"] = cells["cell_tv"] = 0.0
    cells = cells.rename(columns={"g": "time"}).sort_values("time", kind="stable")
    pre = MultiGranularAggregator(levels=levels, aggregates=ALL, regression=True)
    got = pd.concat([pre.process(cells), pre.finish()])
    assert_same_reports(got, want, [*ALL, "slope", "intercept"])


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_rows_or_cells_in_any_order_give_the_reports_of_ordered_ones(data):
    """The operator orders rows by key and time itself (the runner does not): a batch in
    any order, raw rows or pre-aggregated cells (one per key and instant, as Spark sends
    them), gives the reports of the time-ordered rows."""
    levels = data.draw(nested_levels(max_levels=3))
    df = data.draw(streams(0, max_rows=40))
    want = run_in_batches(lambda: MultiGranularAggregator(levels=levels), df, [])
    order = data.draw(st.permutations(range(len(df))))
    cells = df.groupby(["key", "time"]).agg(
        cell_n=("value", "size"), cell_sum=("value", "sum"), cell_min=("value", "min"),
        cell_max=("value", "max")).reset_index()
    cells = cells.sample(frac=1, random_state=data.draw(st.integers(0, 99)))
    for batch in (df.iloc[list(order)], cells):
        runner = EventTimeRunner(MultiGranularAggregator(levels=levels))
        out, _ = runner.push(batch.reset_index(drop=True))
        got = pd.concat([out, runner.finish()], ignore_index=True)
        assert_same_reports(got, want, ["count", "sum", "mean", "min", "max"])


def test_integer_keys_come_out_as_an_integer_column():
    agg = MultiGranularAggregator(levels=[(2, 1)])
    rows = pd.DataFrame({"key": [7, 3, 7], "time": [1, 1, 2], "value": [1.0, 2.0, 3.0]})
    out = pd.concat([agg.process(rows), agg.finish()], ignore_index=True)
    assert out["key"].dtype == np.int64
    assert sorted(set(out["key"].tolist())) == [3, 7]


@pytest.mark.parametrize(("aggregates", "regression", "needed"), [
    (("count", "sum", "mean", "min", "max"), False, 4),
    (("count", "variance"), False, 6),
    (("count",), True, 9),
])
def test_cells_need_only_the_moments_their_reports_read(aggregates, regression, needed):
    """Pre-aggregated cells may leave out the moments these reports never read: the reports
    equal those of raw rows; a column they do read is refused by name when missing."""
    levels = [(4, 1), (12, 2)]
    rng = np.random.default_rng(5)
    t = np.sort(rng.integers(0, 60, 300))
    df = pd.DataFrame({"key": rng.choice(["a", "b", "c"], 300), "time": t,
                       "value": rng.normal(size=300)})
    kwargs = {"levels": levels, "aggregates": aggregates, "regression": regression,
              "weights": [1.0, 0.5]}
    raw = MultiGranularAggregator(**kwargs)
    want = pd.concat([raw.process(df), raw.finish()])
    assert raw.config.cell_columns == CELL_COLUMNS[:needed]
    cells = df.groupby(["key", "time"]).agg(
        cell_n=("value", "size"), cell_sum=("value", "sum"), cell_min=("value", "min"),
        cell_max=("value", "max"), cell_mean=("value", "mean"),
        cell_m2=("value", lambda v: float(((v - v.mean()) ** 2).sum()))).reset_index()
    cells["cell_t_mean"] = cells["cell_t_m2"] = cells["cell_tv"] = 0.0
    cells = cells.sort_values("time", kind="stable")[["key", "time",
                                                      *CELL_COLUMNS[:needed]]]
    pre = MultiGranularAggregator(**kwargs)
    got = pd.concat([pre.process(cells), pre.finish()])
    columns = [c for c in want.columns if c not in ("key", "level", "range", "slide",
                                                   "window_start", "window_end")]
    assert_same_reports(got, want, columns)
    short = cells.drop(columns=[CELL_COLUMNS[needed - 1]])
    with pytest.raises(ValueError, match=CELL_COLUMNS[needed - 1]):
        MultiGranularAggregator(**kwargs).process(short)


@pytest.mark.parametrize(("clause", "message"), [
    ("RANGES 1 HOUR, 1 MINUTE SLIDES 5 MINUTES", "lists 2 ranges but 1 slides"),
    ("RANGES 1 MINUTE, 10 MINUTES SLIDES 7 SECONDS, 1 MINUTE",
     r"level 0: range 1 minutes must be a whole multiple of its slide 7 seconds"),
    ("RANGES 1 HOUR, 1 MINUTE SLIDES 90 SECONDS, 1 MINUTE",
     r"level 1: slide 90 seconds must be a whole multiple of level 0's slide 1 minutes"),
    ("RANGES 1 HOUR, 2 HOURS, 1 MINUTE SLIDES 1 MINUTE, 1 MINUTE, 1 SECOND",
     r"level 2: range 1 hours must be greater than level 1's range 2 hours"),
    ("RANGES 1 HOUR, 1 MINUTE SLIDES 1 SECOND, 1 MINUTE",
     r"level 1: slide 1 seconds must not be smaller than level 0's slide 1 minutes"),
    ("RANGES 1 fortnight SLIDES 1 day", r"`window range '1 fortnight'` must be a positive"),
    ("WINDOW 1 HOUR", "must read like 'RANGES"),
])
def test_clause_errors_name_level_value_and_rule(clause, message):
    with pytest.raises(ValueError, match=message):
        MultiGranularSpec.parse(clause)


def test_clause_parses_case_insensitively_in_either_order_with_weeks():
    a = MultiGranularSpec.parse("[ranges 1 week, 1 day slides 1 day, 1 hour]")
    b = MultiGranularSpec.from_levels([("1 day", "1 hour"), ("1 week", "1 day")])
    c = MultiGranularSpec.parse("RANGES 1 DAY, 1 WEEK SLIDES 1 HOUR, 1 DAY")
    assert a == b == c
    assert a.levels[1].range == 7 * 86_400_000_000


def test_scope_is_designs_formula():
    levels = [(60, 1), (600, 60), (3600, 300)]
    spec = MultiGranularSpec.from_levels(levels, origin=7, closed="right")
    tc = 7 + 3 * 3600 + 123
    front = tc - (tc - 7) % 300
    assert spec.scope(2, tc) == (max(7, front - 3600 + 1), front)
    assert spec.scope(0, 7) == (7, 7)
    # window()'s windows [s, s + w), s = 7 + a whole number of slides: the latest one over by tc
    spec = MultiGranularSpec.from_levels(levels, origin=7)
    end = tc + 1 - (tc + 1 - 7) % 300
    assert spec.scope(2, tc) == (end - 3600, end - 1)
    assert spec.scope(0, 6) == (6 - 59, 6)


def test_closed_is_checked():
    with pytest.raises(ValueError, match="`closed` must be one of 'left', 'right'; got 'both'"):
        MultiGranularSpec.from_levels([(2, 1)], closed="both")


def test_bad_operator_parameters():
    with pytest.raises(ValueError, match=r"`weights` must give one weight per level \(2\)"):
        MultiGranularAggregator(levels=[(2, 1), (4, 2)], weights=[1.0])
    with pytest.raises(ValueError, match="`report` must be one of"):
        MultiGranularAggregator(levels=[(2, 1)], report="sometimes")
    with pytest.raises(ValueError, match="exactly one of `window`"):
        MultiGranularAggregator()


@pytest.mark.parametrize("cls", [MultiGranularAggregator, RecurringItems])
def test_corrupt_bytes_raise_state_format_error(cls):
    op = cls(levels=[(4, 1), (8, 2)])
    column = "value" if cls is MultiGranularAggregator else "item"
    op.process(pd.DataFrame({"key": ["a", "b"], "time": [1, 3], column: [1.0, 2.0]}))
    blob = op.to_bytes()
    for bad in (blob[:-5], blob[:30] + bytes([blob[30] ^ 0xFF]) + blob[31:], b"", b"WKIT" * 9):
        with pytest.raises(StateFormatError):
            cls.from_bytes(bad)
    other = RecurringItems if cls is MultiGranularAggregator else MultiGranularAggregator
    with pytest.raises(StateFormatError, match="object"):
        other.from_bytes(blob)


def test_inconsistent_state_arrays_raise_state_format_error():
    from windowkit.core.serialization import pack_state, unpack_state

    op = MultiGranularAggregator(levels=[(4, 1), (8, 2)])
    op.process(pd.DataFrame({"key": ["a"], "time": [1], "value": [1.0]}))
    version = op.FORMAT_VERSION
    meta, arrays = unpack_state(op.to_bytes(), op.FORMAT_TAG, version)
    bad = dict(arrays, size=arrays["size"] + 50)
    with pytest.raises(StateFormatError, match="MultiGranularAggregator state: .*queue sizes"):
        MultiGranularAggregator.from_bytes(pack_state(op.FORMAT_TAG, version, meta, bad))
    del arrays["cells0"]
    with pytest.raises(StateFormatError, match="MultiGranularAggregator state is corrupt"):
        MultiGranularAggregator.from_bytes(pack_state(op.FORMAT_TAG, version, meta, arrays))


def test_basic_reports_keep_four_fields_and_read_state_written_with_nine():
    """Count, sum, mean, min and max keep basic cells; state bytes written when every chain
    held full cells (before basic cells existed) restore and continue exactly."""
    from windowkit.core.multigranular.cells import BASIC_FIELDS, N_FIELDS
    from windowkit.core.multigranular.state import ChainState

    levels = [(4, 1), (8, 2), (16, 4)]
    aggregates = ("count", "sum", "mean", "min", "max")
    rng = np.random.default_rng(5)
    times = np.sort(rng.integers(0, 60, 80))
    df = pd.DataFrame({"key": rng.choice(["a", "b", "c"], 80).astype(object), "time": times,
                       "value": rng.integers(-9, 9, 80) / 4.0})
    first, rest = df[df["time"] < 30], df[df["time"] >= 30].reset_index(drop=True)

    whole = MultiGranularAggregator(levels=levels, aggregates=aggregates)
    assert whole._state.n_fields == BASIC_FIELDS
    expected = pd.concat([whole.process(df), whole.finish()], ignore_index=True)

    old = MultiGranularAggregator(levels=levels, aggregates=aggregates)
    cfg = old.config
    old._state = ChainState(cfg.effective_spec.chain(), N_FIELDS, cfg.weights, False)
    head = old.process(first)
    restored = MultiGranularAggregator.from_bytes(old.to_bytes())
    assert restored._state.n_fields == BASIC_FIELDS
    got = pd.concat([head, restored.process(rest), restored.finish()], ignore_index=True)
    pd.testing.assert_frame_equal(got.sort_values(BOUNDS, ignore_index=True),
                                  expected.sort_values(BOUNDS, ignore_index=True))
    assert_same_reports(expected, reference_reports(df, levels), list(aggregates))


def test_connection_generator_has_bursts_and_recurring_sources():
    from windowkit.datasets.connections import Burst, connection_records

    burst = Burst(start=20.0, length=5.0, factor=8.0, source=3)
    df = connection_records(duration=60, rate=200, n_sources=50, bursts=[burst],
                            recurring_every=(4.0, 15.0), start=0, seed=5)
    assert df["time"].is_monotonic_increasing and df["time"].between(0, 60_000_000).all()
    inside = df["time"].between(20_000_000, 25_000_000 - 1)
    # the burst source's rate inside the burst is many times its rate outside
    rate_in = (inside & (df["source"] == 3)).sum() / 5
    rate_out = (~inside & (df["source"] == 3)).sum() / 55
    assert rate_in > 5 * rate_out
    # recurring sources (ids 50 and 51) come back once per period
    assert (df["source"] == 50).sum() == 15 and (df["source"] == 51).sum() == 4
    again = connection_records(duration=60, rate=200, n_sources=50, bursts=[burst],
                               recurring_every=(4.0, 15.0), start=0, seed=5)
    pd.testing.assert_frame_equal(df, again)


@pytest.mark.parametrize("make", [
    lambda: MultiGranularAggregator(levels=[(4, 2), (12, 4)], distinct=True),
    lambda: RecurringItems(levels=[(4, 2), (12, 4)]),
], ids=["aggregator", "recurring"])
def test_keys_whose_windows_closed_leave_the_state(make):
    """A long stream of keys that come and go (each key for 10 time units, ten live at a
    time): the keys held, and the state's bytes, follow the live keys, not the keys ever
    seen, and the reports stay the reference's."""
    rng = np.random.default_rng(3)
    times = np.arange(2000)
    df = pd.DataFrame({"key": [f"k{t // 10 + rng.integers(0, 10)}" for t in times],
                       "time": times, "value": rng.random(len(times)), "item": "x"})
    runner = EventTimeRunner(make())
    outs, held, sizes = [], [], []
    for piece in split_frame(df, list(range(50, len(df), 50))):
        outs.append(runner.push(piece, watermark=int(piece["time"].max()))[0])
        runner = EventTimeRunner.from_bytes(runner.to_bytes())
        held.append(len(runner.operator._state.keys))
        sizes.append(len(runner.to_bytes()))
    ever = df["key"].nunique()
    # live: ten keys; the largest range (12) keeps a left key's chain two ranges longer
    assert max(held) < 30 < ever / 5
    assert max(sizes[5:]) < 1.5 * sizes[5]
    got = pd.concat([*outs, runner.finish()], ignore_index=True)
    if isinstance(runner.operator, RecurringItems):
        ref = reference_recurring(df, [(4, 2), (12, 4)])
        key = [*BOUNDS, "item", "count"]
        assert (got.sort_values(key)[key].values.tolist()
                == ref.sort_values(key)[key].values.tolist())
    else:
        assert_same_reports(got, reference_reports(df, [(4, 2), (12, 4)]), ["count", "sum"])
