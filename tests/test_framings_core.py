"""Boundary, delta, aggregate and custom framers against the brute-force reference.

Hypothesis streams (float values with missing ones, gaps that imply absent reports) run through
each core framer in one batch, in random micro-batches with a bytes round trip between them,
and through the event-time runner with out-of-order arrival; all must equal
``windowkit.reference.framings``, which is written from the paper's definitions.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkit.core.frames import (
    AggregateFramer,
    BoundaryFramer,
    CustomFramer,
    DeltaFramer,
    Framing,
    IncreasingTrend,
)
from windowkit.core.frames.custom import CONTINUE, START, ThresholdFraming
from windowkit.core.operator import EventTimeRunner
from windowkit.core.serialization import StateFormatError
from windowkit.reference.frames import threshold_frames_reference
from windowkit.reference.framings import framings_reference
from windowkit.testing.streams import (
    BASE_STEP,
    durations,
    keyed_streams,
    shuffled_within,
    split_frame,
    split_points,
)

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -1.0, 4.5, math.nan]


class SlowIncreasingTrend(Framing):
    """F3 without a kernel: exercises the plain-Python path of the contract."""

    state_size = 1

    def decide(self, state, value, time):
        rising = value > state[0]
        state[0] = value
        return CONTINUE if rising else START


@numba.njit
def _falling_kernel(state, params, value, time):  # pragma: no cover - compiled
    falling = value < state[0] - params[0]
    state[0] = value
    return 2 if falling else 3


class FallingBy(Framing):
    """A user framing with a numba fast path: frames of values falling by more than x."""

    state_size = 1
    kernel = _falling_kernel

    def __init__(self, x: float = 0.0) -> None:
        self.x = x

    def decide(self, state, value, time):
        falling = value < state[0] - self.x
        state[0] = value
        return CONTINUE if falling else START

    def kernel_params(self):
        return np.array([self.x])

    def get_params(self):
        return {"x": self.x}


class FallingByInPython(FallingBy):
    kernel = None


@st.composite
def float_streams(draw, max_keys=3, max_rows=40):
    df = draw(keyed_streams(max_keys=max_keys, max_rows=max_rows))
    values = draw(st.lists(st.sampled_from(VALUES), min_size=len(df), max_size=len(df)))
    return df.assign(value=np.array(values, dtype=np.float64))


@st.composite
def framings(draw):
    """(kind, params, framer factory) for one framing."""
    kind = draw(st.sampled_from(["boundary", "delta", "aggregate", "increasing", "slow",
                                 "threshold"]))
    if kind == "threshold":
        return kind, {}, lambda **kw: CustomFramer(ThresholdFraming(), **kw)
    if kind in ("boundary", "delta"):
        params = {"x": draw(st.sampled_from([0.5, 1.0, 2.5]))}
        cls = BoundaryFramer if kind == "boundary" else DeltaFramer
        return kind, params, lambda **kw: cls(params["x"], **kw)
    if kind == "aggregate":
        params = {"func": draw(st.sampled_from(["count", "sum", "mean", "min", "max"])),
                  "op": draw(st.sampled_from(["<", "<=", ">", ">="])),
                  "x": draw(st.sampled_from([0.0, 1.0, 2.0, 3.5]))}
        return kind, params, lambda **kw: AggregateFramer(**params, **kw)
    framing = IncreasingTrend() if kind == "increasing" else SlowIncreasingTrend()
    return "increasing", {}, lambda **kw: CustomFramer(framing, **kw)


@st.composite
def options(draw, kind, params):
    minimal = kind == "aggregate" and params["op"] in (">", ">=")
    return {
        "min_duration": draw(durations()),
        "missing": draw(st.sampled_from(["unsatisfied", "satisfying"])),
        "schedule": draw(st.sampled_from([None, BASE_STEP])),
        "fragment_every": None if minimal else draw(st.one_of(st.none(), durations())),
        "extent": draw(st.sampled_from(["conservative", "liberal"])),
    }


def canonical(out: pd.DataFrame) -> pd.DataFrame:
    out = out.assign(_final=out["status"] == "final")
    out = out.sort_values(["key", "frame_id", "_final", "last"], kind="stable")
    out = out.drop(columns="_final").reset_index(drop=True)
    return out.astype({"key": object, "end": "Int64"})


def expected_of(df, kind, params, opts):
    return canonical(framings_reference(df, kind, params, **opts))


def run_core(make, df, opts, cuts=(), roundtrip=False):
    framer = make(**opts)
    outputs = []
    for piece in split_frame(df, list(cuts)):
        outputs.append(framer.process(piece))
        if roundtrip:
            framer = type(framer).from_bytes(framer.to_bytes())
    outputs.append(framer.finish())
    return canonical(pd.concat(outputs, ignore_index=True))


@SETTINGS
@given(data=st.data(), df=float_streams(), framing=framings())
def test_core_equals_reference_in_one_batch(data, df, framing):
    kind, params, make = framing
    opts = data.draw(options(kind, params))
    pd.testing.assert_frame_equal(run_core(make, df, opts), expected_of(df, kind, params, opts))


@SETTINGS
@given(data=st.data(), df=float_streams(), framing=framings())
def test_any_split_into_batches_with_a_bytes_round_trip_gives_the_same_frames(data, df, framing):
    kind, params, make = framing
    opts = data.draw(options(kind, params))
    cuts = data.draw(split_points(len(df)))
    got = run_core(make, df, opts, cuts, roundtrip=True)
    pd.testing.assert_frame_equal(got, expected_of(df, kind, params, opts))


@SETTINGS
@given(data=st.data(), df=float_streams(max_keys=2), framing=framings())
def test_out_of_order_arrival_within_the_watermark_gives_the_same_frames(data, df, framing):
    # Arrival shuffled by at most `delay`; the watermark trails the largest time seen by
    # delay + 1 µs, so no row is late; keys come as each batch's own Categorical (as on Spark).
    kind, params, make = framing
    opts = data.draw(options(kind, params))
    delay = data.draw(st.integers(0, 4 * BASE_STEP))
    arrival = shuffled_within(df, delay, seed=data.draw(st.integers(0, 2**16)))
    runner = EventTimeRunner(make(**opts))
    outputs, max_seen = [], None
    for piece in split_frame(arrival, data.draw(split_points(len(arrival)))):
        piece = piece.assign(key=pd.Categorical(piece["key"]))
        watermark = None
        if len(piece):
            max_seen = max(int(piece["time"].max()), max_seen or 0)
            watermark = max_seen - delay - 1
        out, late = runner.push(piece, watermark)
        assert late.empty
        outputs.append(out)
        runner = EventTimeRunner.from_bytes(runner.to_bytes())
    outputs.append(runner.finish())
    got = canonical(pd.concat(outputs, ignore_index=True))
    pd.testing.assert_frame_equal(got, expected_of(df, kind, params, opts))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), df=float_streams(max_keys=2, max_rows=20), framing=framings())
def test_frames_settled_by_the_watermark_alone_are_the_reference_frames(data, df, framing):
    # No finish(): rows one at a time, the watermark 1 µs behind each. Every final row out
    # must be a reference frame; only frames still open (or waiting for their end) may lack.
    kind, params, make = framing
    opts = data.draw(options(kind, params))
    runner = EventTimeRunner(make(**opts))
    outputs = [runner.operator.empty_output()]
    for i in range(len(df)):
        row = df.iloc[i:i + 1].reset_index(drop=True)
        out, _ = runner.push(row, int(row["time"].iloc[0]) - 1)
        outputs.append(out)
    got = canonical(pd.concat(outputs, ignore_index=True))
    expected = expected_of(df, kind, params, opts)
    got_final = got[got.status == "final"]
    merged = got_final.merge(expected, how="left", indicator=True)
    assert (merged["_merge"] == "both").all()
    pending = runner.operator.open_frames + runner.buffered_rows
    assert 0 <= (expected.status == "final").sum() - len(got_final) <= pending


# -- Appendix B, exactly ----------------------------------------------------------------------
# time   1  2  3  4  5  6  7  8  9  10
# temp  30 31 33 34 30 34 33 34 35 32
TEMPS = np.array([30, 31, 33, 34, 30, 34, 33, 34, 35, 32], dtype=float)


@pytest.mark.parametrize("framing", [IncreasingTrend(), SlowIncreasingTrend()])
def test_appendix_b_f3_increasing_over_at_least_three_time_units(framing):
    #  increasing runs: [1  2  3  4] [5  6] [7  8  9] [10]
    #  at least three:  (1,        4)       (7,    9)
    framer = CustomFramer(framing, min_duration="3 rows")
    out = pd.concat([framer.update(np.arange(1, 11), TEMPS), framer.finish()])
    assert out[["start", "last", "end", "frame_id"]].values.tolist() == [[1, 4, 5, 1],
                                                                          [7, 9, 10, 7]]


def test_hand_computed_aggregate_boundary_and_delta_frames():
    # sum >= 60 (minimal):   30 31 | 33 34 | 30 34 | 33 34 | 35 32 -> closes at 2, 4, 6, 8, 10
    agg = AggregateFramer("sum", ">=", 60)
    out = pd.concat([agg.update(np.arange(1, 11), TEMPS), agg.finish()])
    assert out[["start", "last", "end"]].values.tolist() == [[1, 2, 3], [3, 4, 5], [5, 6, 7],
                                                             [7, 8, 9], [9, 10, 11]]
    # max < 34 (maximal): 30 31 33 | 34 skipped | 30 | 34 skipped | 33 | 34 35 skipped | 32
    agg = AggregateFramer("max", "<", 34)
    out = pd.concat([agg.update(np.arange(1, 11), TEMPS), agg.finish()])
    assert out[["start", "last", "end"]].values.tolist() == [[1, 3, 4], [5, 5, 6], [7, 7, 8],
                                                             [10, 10, 11]]
    # bands of 2 degrees: 30 31 | 33 | 34 | 30 | 34 | 33 | 34 35 | 32
    bnd = BoundaryFramer(2.0, min_duration="2 rows")
    out = pd.concat([bnd.update(np.arange(1, 11), TEMPS), bnd.finish()])
    assert out[["start", "last", "end"]].values.tolist() == [[1, 2, 3], [8, 9, 10]]
    # delta < 3: 30 31 | 33 34 | 30 | 34 33 34 35 | 32 (liberal: start at the report before)
    dlt = DeltaFramer(3.0, extent="liberal")
    out = pd.concat([dlt.update(np.arange(1, 11), TEMPS), dlt.finish()])
    assert out[["start", "last", "end"]].values.tolist() == [[1, 2, 3], [2, 4, 5], [4, 5, 6],
                                                             [5, 9, 10], [9, 10, 11]]


def test_missing_values_break_or_are_bridged():
    # delta < 5 over 1 2 NaN 3: "unsatisfied" ends the frame at the NaN; "satisfying" bridges
    values = [1.0, 2.0, np.nan, 3.0]
    brk = DeltaFramer(5.0).update(np.arange(4), values)
    assert brk[["start", "last", "end", "n_tuples"]].values.tolist() == [[0, 1, 2, 2]]
    bridged = DeltaFramer(5.0, missing="satisfying")
    bridged.update(np.arange(4), values)
    assert bridged.finish()[["start", "last", "end", "n_tuples", "n_missing"]].values.tolist() \
        == [[0, 3, 4, 4, 1]]


def test_a_schedule_turns_gaps_into_absent_reports_and_the_watermark_closes_frames():
    # reports every 10; the report due at 20 is absent: the frame ends there
    framer = BoundaryFramer(10.0, schedule=10)
    out = framer.update(np.array([0, 10, 30]), [1.0, 2.0, 3.0])
    assert out[["start", "last", "end"]].values.tolist() == [[0, 10, 20]]
    assert framer.next_deadline() == 44
    assert framer.advance(44)[["start", "last", "end"]].values.tolist() == [[30, 30, 40]]


def test_a_minimal_frame_waits_for_the_next_report_to_know_its_end():
    framer = AggregateFramer("count", ">=", 2, schedule=10)
    assert framer.update(np.array([0, 10]), [1.0, 1.0]).empty
    assert framer.advance(23).empty
    assert framer.advance(24)[["start", "last", "end"]].values.tolist() == [[0, 10, 20]]


@pytest.mark.parametrize("blob, message", [
    (b"", "too short"),
    (b"XXXX" + bytes(40), "magic"),
])
def test_corrupt_state_bytes_raise_a_clear_error(blob, message):
    with pytest.raises(StateFormatError, match=message):
        DeltaFramer.from_bytes(blob)


def test_flipped_byte_foreign_state_and_unknown_framing_are_detected():
    blob = bytearray(DeltaFramer(1.0).to_bytes())
    blob[-3] ^= 0xFF
    with pytest.raises(StateFormatError, match="checksum"):
        DeltaFramer.from_bytes(bytes(blob))
    with pytest.raises(StateFormatError, match="'BNDFRAME' object, not a 'DLTFRAME'"):
        DeltaFramer.from_bytes(BoundaryFramer(1.0).to_bytes())
    from windowkit.core.serialization import pack_state, unpack_state

    meta, arrays = unpack_state(CustomFramer(IncreasingTrend()).to_bytes(), "CUSFRAME", 1)
    for name in ("os:system", "windowkit.core.frames:NoSuchFraming", "NoSuchFraming"):
        meta["framing"] = {"name": name, "params": {}}
        with pytest.raises(StateFormatError, match="framing .* not in windowkit's registry"):
            CustomFramer.from_bytes(pack_state("CUSFRAME", 1, meta, arrays))
    del arrays["fstate"]
    meta["framing"] = {"name": "IncreasingTrend", "params": {}}
    with pytest.raises(StateFormatError, match="CustomFramer state bytes do not decode"):
        CustomFramer.from_bytes(pack_state("CUSFRAME", 1, meta, arrays))


@pytest.mark.parametrize("make, message", [
    (lambda: BoundaryFramer(0), "`x` must be a finite number > 0; got 0"),
    (lambda: DeltaFramer(math.inf), "`x` must be a finite number > 0; got inf"),
    (lambda: AggregateFramer("median", "<", 1), "`func` must be one of"),
    (lambda: AggregateFramer("sum", "==", 1), "`op` must be one of"),
    (lambda: AggregateFramer("sum", "<", math.nan), "`x` must be a finite number; got nan"),
    (lambda: AggregateFramer("sum", ">", 1, fragment_every="2 rows"),
     "`fragment_every` must be None for a minimal framing"),
    (lambda: DeltaFramer(1.0, min_duration="0 rows"), "`min_duration` must be a positive"),
    (lambda: DeltaFramer(1.0, missing="maybe"), "`missing` must be one of"),
    (lambda: DeltaFramer(1.0, schedule="3 rows"), "`schedule` must be a positive duration"),
    (lambda: DeltaFramer(1.0, extent="wide"), "`extent` must be one of"),
    (lambda: CustomFramer(object()), "`framing` must be a windowkit Framing; got object"),
])
def test_invalid_parameters_name_the_parameter(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_time_going_backwards_within_a_key_is_an_error():
    framer = DeltaFramer(1.0)
    framer.update(np.array([5]), [1.0], key=np.array(["r1"]))
    with pytest.raises(ValueError, match="`time` went backwards for key 'r1': 4 after 5"):
        framer.update(np.array([4]), [1.0], key=np.array(["r1"]))


def test_equal_times_are_ordered_by_value_whatever_the_arrival_order():
    a = BoundaryFramer(1.0).update(np.array([0, 0, 1]), [2.5, 0.5, 0.7])
    b = BoundaryFramer(1.0).update(np.array([0, 0, 1]), [0.5, 2.5, 0.7])
    pd.testing.assert_frame_equal(a, b)


def test_appendix_b_f1_and_f2():
    # F1: maximal periods with temp > 32: (3, 4) and (6, 9); F2: the longest of them, (6, 9)
    from windowkit.core.frames import ThresholdFramer
    from windowkit.core.frames.longest import longest_frames

    framer = ThresholdFramer("1 rows")
    f1 = pd.concat([framer.update(np.arange(1, 11), TEMPS > 32), framer.finish()])
    assert f1[["start", "last"]].values.tolist() == [[3, 4], [6, 9]]
    assert longest_frames(f1)[["start", "last"]].values.tolist() == [[6, 9]]


@SETTINGS
@given(data=st.data(), df=float_streams(), framing=framings())
def test_longest_frames_equal_the_reference(data, df, framing):
    from windowkit.core.frames.longest import longest_frames
    from windowkit.reference.framings import longest_frames_reference

    kind, params, _ = framing
    opts = data.draw(options(kind, params))
    frames = expected_of(df, kind, params, opts)
    final = frames[frames.status == "final"]
    per_key = data.draw(st.booleans())
    got = longest_frames(frames, per_key=per_key)
    expected = longest_frames_reference(final, by_key=per_key) if len(final) else final
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True))


def test_longest_frames_needs_frame_columns():
    from windowkit.core.frames.longest import longest_frames

    with pytest.raises(ValueError, match="`frames` must have columns key, start, last, status"):
        longest_frames(pd.DataFrame({"start": [1]}))


@SETTINGS
@given(df=keyed_streams(), min_duration=durations(), fragment_every=st.one_of(
    st.none(), durations()), missing=st.sampled_from(["unsatisfied", "satisfying"]),
    schedule=st.sampled_from([None, BASE_STEP]))
def test_threshold_framing_gives_the_threshold_oracle_frames(df, min_duration, fragment_every,
                                                              missing, schedule):
    # Threshold frames through the custom contract (the route to a liberal extent for them)
    # against the threshold frames' own oracle: the same frames, conservatively.
    opts = {"min_duration": min_duration, "fragment_every": fragment_every,
            "missing": missing, "schedule": schedule}
    expected = canonical(threshold_frames_reference(df, **opts))
    values = df.assign(value=df["value"].astype(float).where(df["value"] >= 0))
    got = run_core(lambda **kw: CustomFramer(ThresholdFraming(), **kw), values, opts)
    pd.testing.assert_frame_equal(got, expected)


def test_liberal_threshold_frames_reach_back_to_the_last_unsatisfying_report():
    # time   1  2  3  4  5  6  7  8  9  10     F1 (temp > 32), liberal extent:
    # temp  30 31 33 34 30 34 33 34 35 32     [2, 5) and [5, 10): from the last report at or
    #          [--------)[--------------)     below 32 to the next one
    framer = CustomFramer(ThresholdFraming(), extent="liberal")
    out = framer.update(np.arange(1, 11), (TEMPS > 32).astype(float))
    assert out[["start", "last", "end"]].values.tolist() == [[2, 4, 5], [5, 9, 10]]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), df=float_streams())
def test_a_user_numba_kernel_gives_the_frames_of_its_python_decide(data, df):
    opts = data.draw(options("custom", {}))
    compiled = run_core(lambda **kw: CustomFramer(FallingBy(0.5), **kw), df, opts)
    python = run_core(lambda **kw: CustomFramer(FallingByInPython(0.5), **kw), df, opts)
    pd.testing.assert_frame_equal(compiled, python)
    again = CustomFramer.from_bytes(CustomFramer(FallingBy(0.5), **opts).to_bytes())
    assert isinstance(again.framing, FallingBy) and again.framing.x == 0.5


def test_the_loop_around_a_user_kernel_is_compiled_once_for_every_framing_of_its_class():
    # a numba dispatcher read through an instance is a method bound to that instance: the
    # loop was compiled again, seconds each time, for every framing object
    from windowkit.core.frames import _engine

    for x in (0.5, 0.25, 0.5):
        CustomFramer(FallingBy(x)).update(np.arange(4), np.array([3.0, 2.0, 1.0, 0.5]))
    assert [k for k in _engine._USER_LOOPS if k is FallingBy.__dict__["kernel"]]
    assert sum(1 for k in _engine._USER_LOOPS if getattr(k, "__func__", k)
               is FallingBy.__dict__["kernel"]) == 1
