"""ThresholdFramer against the brute-force oracle, batch-split invariance, watermarks, errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from windowkit.core.frames import ThresholdFramer
from windowkit.core.operator import EventTimeRunner
from windowkit.core.serialization import StateFormatError
from windowkit.reference.frames import threshold_frames_reference
from windowkit.testing.streams import (
    BASE_STEP,
    durations,
    keyed_streams,
    shuffled_within,
    split_frame,
    split_points,
)

SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

framer_params = st.fixed_dictionaries({
    "min_duration": durations(),
    "missing": st.sampled_from(["unsatisfied", "satisfying"]),
    "schedule": st.sampled_from([None, BASE_STEP]),
    "fragment_every": st.one_of(st.none(), durations()),
})


def canonical(out: pd.DataFrame) -> pd.DataFrame:
    out = out.assign(_final=out["status"] == "final")
    out = out.sort_values(["key", "frame_id", "_final", "last"], kind="stable")
    out = out.drop(columns="_final").reset_index(drop=True)
    return out.astype({"key": object, "end": "Int64"})


def run_core(df: pd.DataFrame, params: dict, cuts: list[int] = (), roundtrip: bool = False):
    framer = ThresholdFramer(**params)
    outputs = []
    for piece in split_frame(df, list(cuts)):
        outputs.append(framer.process(piece))
        if roundtrip:
            framer = ThresholdFramer.from_bytes(framer.to_bytes())
    outputs.append(framer.finish())
    return canonical(pd.concat(outputs, ignore_index=True))


@SETTINGS
@given(df=keyed_streams(), params=framer_params)
def test_core_equals_reference_in_one_batch(df, params):
    expected = canonical(threshold_frames_reference(df, **params))
    pd.testing.assert_frame_equal(run_core(df, params), expected)


@SETTINGS
@given(data=st.data(), df=keyed_streams(), params=framer_params)
def test_any_split_into_batches_gives_the_same_frames(data, df, params):
    # rows of one time travel together (the runner releases a time's rows at once)
    times = df["time"].to_numpy()
    cuts = [c for c in data.draw(split_points(len(df))) if 0 < c < len(df)
            and times[c] != times[c - 1]]
    expected = canonical(threshold_frames_reference(df, **params))
    pd.testing.assert_frame_equal(run_core(df, params, cuts, roundtrip=True), expected)


@SETTINGS
@given(data=st.data(), df=keyed_streams(), params=framer_params)
def test_a_batch_in_any_row_order_gives_the_frames_of_its_time_order(data, df, params):
    # Within one batch the framer orders each key's rows itself, ties included.
    seed = data.draw(st.integers(0, 2**16))
    order = np.random.default_rng(seed).permutation(len(df))
    shuffled = df.iloc[order]
    ordered = shuffled.sort_values("time", kind="stable")
    expected = run_core(ordered.reset_index(drop=True), params)
    pd.testing.assert_frame_equal(run_core(shuffled.reset_index(drop=True), params), expected)


@SETTINGS
@given(df=keyed_streams(), params=framer_params)
def test_categorical_keys_give_the_frames_of_plain_keys(df, params):
    # Unused categories (an Arrow dictionary shared across batches) must not become keys.
    categories = ["unused", *sorted(df["key"].unique())]
    as_category = df.assign(key=pd.Categorical(df["key"], categories=categories))
    framer = ThresholdFramer(**params)
    out = pd.concat([framer.process(as_category), framer.finish()], ignore_index=True)
    assert framer.n_keys == df["key"].nunique()
    pd.testing.assert_frame_equal(canonical(out), run_core(df, params))


@SETTINGS
@given(data=st.data(), df=keyed_streams(max_keys=2), params=framer_params)
def test_out_of_order_arrival_within_the_watermark_gives_the_same_frames(data, df, params):
    # Arrival is shuffled by at most `delay`; the watermark trails the largest time seen by
    # `delay` + 1 µs, so no row is late and the runner must restore event-time order exactly.
    delay = data.draw(st.integers(0, 4 * BASE_STEP))
    arrival = shuffled_within(df, delay, seed=data.draw(st.integers(0, 2**16)))
    cuts = data.draw(split_points(len(arrival)))
    # The Spark adapter passes keys as a Categorical with each batch's own categories.
    categorical = data.draw(st.booleans())
    runner = EventTimeRunner(ThresholdFramer(**params))
    outputs = []
    max_seen = None
    for piece in split_frame(arrival, cuts):
        if categorical:
            piece = piece.assign(key=pd.Categorical(piece["key"]))
        watermark = None
        if len(piece):
            max_seen = max(int(piece["time"].max()), max_seen or 0)
            watermark = max_seen - delay - 1  # a row at max_seen - delay may still come
        out, late = runner.push(piece, watermark)
        assert late.empty
        outputs.append(out)
        runner = EventTimeRunner.from_bytes(runner.to_bytes())
    outputs.append(runner.finish())
    got = canonical(pd.concat(outputs, ignore_index=True))
    expected = canonical(threshold_frames_reference(df, **params))
    pd.testing.assert_frame_equal(got, expected)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=keyed_streams(max_keys=2, max_rows=25), params=framer_params)
def test_frames_settled_by_the_watermark_are_the_oracle_frames(df, params):
    # Streaming never calls finish(): rows arrive one at a time and the watermark trails each
    # row's time by 1 µs (another key may still send a row at the same time). Every final
    # frame emitted must be one of the oracle's, and only frames still open may be missing.
    runner = EventTimeRunner(ThresholdFramer(**params))
    outputs = [runner.operator.empty_output()]
    for i in range(len(df)):
        row = df.iloc[i : i + 1].reset_index(drop=True)
        out, late = runner.push(row, int(row["time"].iloc[0]) - 1)
        assert late.empty
        outputs.append(out)
    got = canonical(pd.concat(outputs, ignore_index=True))
    expected = canonical(threshold_frames_reference(df, **params))
    got_final = got[got.status == "final"]
    merged = got_final.merge(expected, how="left", indicator=True)
    assert (merged["_merge"] == "both").all()
    n_pending = runner.operator.open_frames + runner.buffered_rows
    assert 0 <= len(expected[expected.status == "final"]) - len(got_final) <= n_pending


def test_appendix_b_f1_frames():
    # time   1  2  3  4  5  6  7  8  9  10
    # temp  30 31 33 34 30 34 33 34 35 32      predicate: temp > 32
    #             [-----)  [-----------)
    temps = np.array([30, 31, 33, 34, 30, 34, 33, 34, 35, 32])
    out = ThresholdFramer("1 rows").update(np.arange(1, 11), temps > 32)
    assert out[["start", "last", "end"]].values.tolist() == [[3, 4, 5], [6, 9, 10]]


@pytest.mark.parametrize("blob, message", [
    (b"", "too short"),
    (b"XXXX" + bytes(40), "magic"),
])
def test_corrupt_state_bytes_raise_a_clear_error(blob, message):
    with pytest.raises(StateFormatError, match=message):
        ThresholdFramer.from_bytes(blob)


def test_flipped_byte_and_foreign_state_are_detected():
    blob = bytearray(ThresholdFramer("2 rows").to_bytes())
    blob[-3] ^= 0xFF
    with pytest.raises(StateFormatError, match="checksum"):
        ThresholdFramer.from_bytes(bytes(blob))
    runner_bytes = EventTimeRunner(ThresholdFramer("2 rows")).to_bytes()
    with pytest.raises(StateFormatError, match="'RUNNER' object, not a 'THRFRAME'"):
        ThresholdFramer.from_bytes(runner_bytes)


@pytest.mark.parametrize("kwargs, message", [
    ({"min_duration": "-3 rows"}, "`min_duration` must be a positive duration"),
    ({"min_duration": "0 seconds"}, "`min_duration` must be a positive duration"),
    ({"min_duration": "3 parsecs"}, "`min_duration` must be a positive duration"),
    ({"missing": "maybe"}, "`missing` must be one of"),
    ({"schedule": "-30 seconds"}, "`schedule` must be a positive duration"),
    ({"schedule": "3 rows"}, "`schedule` must be a positive duration"),
    ({"fragment_every": "0 rows"}, "`fragment_every` must be a positive duration"),
])
def test_invalid_parameters_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ThresholdFramer(**kwargs)


def test_time_going_backwards_within_a_key_is_an_error():
    framer = ThresholdFramer("1 rows")
    framer.update(np.array([5]), [True], key=np.array(["r1"]))
    with pytest.raises(ValueError, match="`time` went backwards for key 'r1': 4 after 5"):
        framer.update(np.array([4]), [True], key=np.array(["r1"]))


def test_late_rows_are_counted_and_returned_not_dropped():
    runner = EventTimeRunner(ThresholdFramer("1 rows"))
    runner.push(pd.DataFrame({"key": ["a", "a"], "time": [10, 20], "value": [1, 0]}), 20)
    _, late = runner.push(pd.DataFrame({"key": ["a", "a"], "time": [15, 25], "value": [1, 1]}),
                          None)
    assert late["time"].tolist() == [15]
    assert runner.late_rows == 1
    assert runner.buffered_rows == 1


@st.composite
def _streams_with_ties(draw: st.DrawFn) -> pd.DataFrame:
    """Keyed streams where some rows share their key's time with other rows."""
    df = draw(keyed_streams(max_rows=30))
    assume(len(df) > 0)
    picks = draw(st.lists(st.integers(0, len(df) - 1), max_size=15))
    extra = df.iloc[picks].copy()
    extra["value"] = draw(st.lists(st.sampled_from([1, 0, -1]), min_size=len(extra),
                                   max_size=len(extra)))
    both = pd.concat([df, extra], ignore_index=True).astype({"value": df["value"].dtype})
    return both.sort_values("time", kind="stable")


@settings(SETTINGS, max_examples=40)
@given(data=st.data(), df=_streams_with_ties(), params=framer_params,
       duplicates=st.sampled_from(["keep", "any", "all"]))
def test_tied_rows_give_the_reference_frames_in_any_arrival_order_issue16(data, df, params,
                                                                        duplicates):
    # The same rows in another order (ties included) give the same frames: output never
    # depends on file order or partitioning.
    params = {**params, "duplicates": duplicates}
    expected = canonical(threshold_frames_reference(df, **params))
    seed = data.draw(st.integers(0, 2**16))
    shuffled = df.iloc[np.random.default_rng(seed).permutation(len(df))].reset_index(drop=True)
    pd.testing.assert_frame_equal(run_core(shuffled, params), expected)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6),
                          st.sampled_from([0.5, 1.5, np.nan, np.inf, -np.inf, -1.0])),
                min_size=0, max_size=40),
       st.booleans())
def test_rows_reach_the_loop_with_each_keys_rows_in_strict_time_order(rows, per_key_sorted):
    # The framing loop keeps each key's state apart: rows whose keys are interleaved but each
    # in strict time order go through as they are; rows that a sort by time puts so go in
    # time order; any others are sorted by (key, time, value with missing last, infinities
    # apart), exactly as the full sort orders them. Either way each key's rows reach the loop
    # as the full sort orders them.
    from windowkit.core.frames._engine import _order_rows

    if per_key_sorted:  # interleaved keys, each key's times increasing
        rows = sorted(rows, key=lambda r: r[1])
    slot = np.array([r[0] for r in rows], dtype=np.int64)
    time = np.array([r[1] for r in rows], dtype=np.int64)
    value = np.array([r[2] for r in rows], dtype=np.float64)
    got_slot, got_time, got_value, interleaved = _order_rows(slot, time, value, 4)
    by_value = sorted({(math.isnan(v), 0.0 if math.isnan(v) else v) for v in value.tolist()})
    rank = [by_value.index((math.isnan(v), 0.0 if math.isnan(v) else v)) for v in value.tolist()]
    order = np.lexsort((np.array(rank, dtype=np.int64), time, slot))
    no_ties = all(len(set(time[slot == s])) == np.count_nonzero(slot == s) for s in range(4))
    strict = all(np.all(np.diff(time[slot == s]) > 0) for s in range(4))
    if interleaved:
        assert no_ties
        for s in range(4):
            mine, sorted_ = got_slot == s, slot[order] == s
            assert np.all(np.diff(got_time[mine]) > 0)
            np.testing.assert_array_equal(got_time[mine], time[order][sorted_])
            np.testing.assert_array_equal(got_value[mine], value[order][sorted_])
        if strict:  # as given
            for got, given_ in ((got_slot, slot), (got_time, time), (got_value, value)):
                np.testing.assert_array_equal(got, given_)
    else:
        np.testing.assert_array_equal(got_slot, slot[order])
        np.testing.assert_array_equal(got_time, time[order])
        np.testing.assert_array_equal(got_value, value[order])
    if per_key_sorted and strict and len(rows) > 1:
        assert interleaved or np.all(np.diff(slot) >= 0)
