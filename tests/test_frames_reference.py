"""Tests of the threshold-frames oracle, the stream strategies and the routers dataset.

Timelines: ``1`` predicate true, ``0`` false, ``m`` a missing real row (value -1), ``.`` a virtual
absent report inferred from the schedule, ``|`` the end-of-input report; ``[===)`` a frame from
its start to its (exclusive) end.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkit.datasets.routers import router_incidents, router_readings
from windowkit.reference.frames import expand_schedule, threshold_frames_reference
from windowkit.testing.streams import (
    BASE_STEP,
    durations,
    keyed_streams,
    shuffled_within,
    split_frame,
    split_points,
)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def stream(times: list[int], values: list[int], key: str = "a") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "key": key,
            "time": pd.Series(times, dtype="int64"),
            "value": pd.Series(values, dtype="int8"),
        }
    )


def finals(out: pd.DataFrame) -> list[tuple[int, int, int, int, int]]:
    """(start, last, end, n_tuples, n_missing) of the final rows."""
    f = out[out["status"] == "final"]
    return [
        (int(r.start), int(r.last), int(r.end), int(r.n_tuples), int(r.n_missing))
        for r in f.itertuples()
    ]


def partials(out: pd.DataFrame) -> list[tuple[int, int, int, int]]:
    """(frame_id, last, n_tuples, n_missing) of the partial rows."""
    p = out[out["status"] == "partial"]
    assert p["end"].isna().all()
    return [
        (int(r.frame_id), int(r.last), int(r.n_tuples), int(r.n_missing)) for r in p.itertuples()
    ]


# --------------------------------------------------------------------------------------------
# Appendix B
# --------------------------------------------------------------------------------------------


def test_appendix_b_f1() -> None:
    temps = [30, 31, 33, 34, 30, 34, 33, 34, 35, 32]
    df = stream(list(range(1, 11)), [int(t > 32) for t in temps])
    out = threshold_frames_reference(df, "1 rows")
    # time   1  2  3  4  5  6  7  8  9  10
    # value  0  0  1  1  0  1  1  1  1  0
    #              [=====)  [===========)
    assert finals(out) == [(3, 4, 5, 2, 0), (6, 9, 10, 4, 0)]
    assert out["frame_id"].tolist() == [3, 6]  # the time of each frame's first row
    assert list(out.columns) == [
        "key",
        "frame_id",
        "start",
        "end",
        "last",
        "n_tuples",
        "n_missing",
        "status",
    ]
    assert [str(t) for t in out.dtypes] == [
        "object",
        "int64",
        "int64",
        "Int64",
        "int64",
        "int64",
        "int64",
        "object",
    ]


# --------------------------------------------------------------------------------------------
# Schedule: absent reports from gaps, halves rounded up
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gap", "absent"),
    [(5, 0), (14, 0), (15, 1), (20, 1), (24, 1), (25, 2), (30, 2), (35, 3), (4, 0)],
)
def test_schedule_absent_count_rounds_half_up(gap: int, absent: int) -> None:
    expanded = expand_schedule([(100, 1), (100 + gap, 1)], 10)
    # P = 10: round(gap / P) - 1 absent reports between the rows, then `|` at last + P
    # 100        100+gap
    #  1  .  .  .  1  |
    virtual = [t for t, v in expanded[1:-2]]
    assert virtual == [100 + 10 * j for j in range(1, absent + 1)]
    assert expanded[0] == (100, 1)
    assert expanded[-1] == (100 + gap + 10, -1)


def test_schedule_gap_splits_frame_under_unsatisfied() -> None:
    # P = 10
    # time   0    10   15   25
    #        1    .    1    |        (gap 15 = 1.5 P rounds to 2 P: one absent report)
    #        [====)    [====)
    out = threshold_frames_reference(stream([0, 15], [1, 1]), "1 rows", schedule=10)
    assert finals(out) == [(0, 0, 10, 1, 0), (15, 15, 25, 1, 0)]
    # time   0     14   24
    #        1     1    |            (gap 14 = 1.4 P rounds to 1 P: nothing absent)
    #        [=========)
    out = threshold_frames_reference(stream([0, 14], [1, 1]), "1 rows", schedule=10)
    assert finals(out) == [(0, 14, 24, 2, 0)]


def test_no_virtual_report_before_first_row() -> None:
    # P = 10; the key starts at 100: nothing is absent before it
    # time  100  110  120
    #        1    1    |
    #        [========)
    out = threshold_frames_reference(
        stream([100, 110], [1, 1]), "1 rows", missing="satisfying", schedule="10 us"
    )
    assert finals(out) == [(100, 110, 120, 2, 0)]


# --------------------------------------------------------------------------------------------
# Missing values: bridging, never start or end on missing
# --------------------------------------------------------------------------------------------


def test_real_missing_row_separates_or_is_bridged() -> None:
    df = stream([1, 2, 3, 4], [1, -1, 1, 0])
    # time   1  2  3  4
    #        1  m  1  0
    # unsat  [=)  [=)          the missing row separates
    # sat    [=======)         the missing row is bridged and counted
    assert finals(threshold_frames_reference(df, "1 rows")) == [(1, 1, 2, 1, 0), (3, 3, 4, 1, 0)]
    out = threshold_frames_reference(df, "1 rows", missing="satisfying")
    assert finals(out) == [(1, 3, 4, 3, 1)]


def test_virtual_absent_reports_are_bridged_under_satisfying() -> None:
    # P = 10
    # time   0    10   20   25   35
    #        1    .    .    1    |
    #        [==================)     n_tuples 4 (two bridged absences), end = 25 + P
    out = threshold_frames_reference(
        stream([0, 25], [1, 1]), "1 rows", missing="satisfying", schedule=10
    )
    assert finals(out) == [(0, 25, 35, 4, 2)]


def test_frame_never_starts_or_ends_on_missing() -> None:
    df = stream([1, 2, 3, 4, 5, 6], [-1, 1, 1, -1, -1, 0])
    # time   1  2  3  4  5  6
    #        m  1  1  m  m  0
    #           [====)            leading and trailing missing dropped; end = next element (4)
    out = threshold_frames_reference(df, "1 rows", missing="satisfying")
    assert finals(out) == [(2, 3, 4, 2, 0)]


def test_segment_of_only_missing_values_is_no_frame() -> None:
    # P = 10
    # time   0    10   20   30   40
    #        0    m    .    m    |      nothing known to satisfy: no frame
    df = stream([0, 10, 30], [0, -1, -1])
    assert threshold_frames_reference(df, "1 rows", missing="satisfying", schedule=10).empty


# --------------------------------------------------------------------------------------------
# End of a frame
# --------------------------------------------------------------------------------------------


def test_end_at_end_of_input_without_schedule_is_last_plus_one() -> None:
    # time   5  7
    #        0  1    (end of input)
    #           [)   end = 7 + 1
    out = threshold_frames_reference(stream([5, 7], [0, 1]), "1 rows")
    assert finals(out) == [(7, 7, 8, 1, 0)]


def test_end_at_end_of_input_with_schedule_is_last_plus_period() -> None:
    # P = 10
    # time   5   15  25
    #        0   1   |
    #            [===)
    out = threshold_frames_reference(stream([5, 15], [0, 1]), "1 rows", schedule=10)
    assert finals(out) == [(15, 15, 25, 1, 0)]


def test_end_is_the_next_virtual_report_when_a_gap_follows() -> None:
    # P = 10
    # time   0    10   20   30   40   50
    #        1    1    .    .    0    |
    #        [========)                     end = first absent report
    df = stream([0, 10, 40], [1, 1, 0])
    for missing in ("unsatisfied", "satisfying"):
        out = threshold_frames_reference(df, "1 rows", missing=missing, schedule=10)
        assert finals(out) == [(0, 10, 20, 2, 0)]


def test_end_is_next_real_row_whatever_its_value() -> None:
    # time   0  3  9
    #        1  1  m
    #        [====)        end = time of the following missing row
    out = threshold_frames_reference(stream([0, 3, 9], [1, 1, -1]), "1 rows")
    assert finals(out) == [(0, 3, 9, 2, 0)]


def test_time_ties_do_not_depend_on_input_order_issue16() -> None:
    # time   5  5  6
    #        1  0  1        tied rows are taken unsatisfied, missing, satisfying, in any input
    #        .  [-----)     order: the 0 comes first, so one frame of the two 1s
    for values in ([1, 0, 1], [0, 1, 1]):
        out = threshold_frames_reference(stream([5, 5, 6], values), "1 rows")
        assert finals(out) == [(5, 6, 7, 2, 0)]


def test_time_ties_collapse_to_one_report_with_any_or_all_issue16() -> None:
    # time   5  5  6  7  7
    #        1  0  1  m  0
    out = threshold_frames_reference(stream([5, 5, 6, 7, 7], [1, 0, 1, -1, 0]), "1 rows",
                                     duplicates="any")
    #  any:  1     1  m        -> one frame [5, 7) of two reports
    assert finals(out) == [(5, 6, 7, 2, 0)]
    out = threshold_frames_reference(stream([5, 5, 6, 7, 7], [1, 0, 1, -1, 0]), "1 rows",
                                     duplicates="all")
    #  all:  0     1  0        -> one frame [6, 7)
    assert finals(out) == [(6, 6, 7, 1, 0)]


# --------------------------------------------------------------------------------------------
# Minimum duration and frame ids
# --------------------------------------------------------------------------------------------


def test_min_duration_in_rows() -> None:
    df = stream([1, 2, 3, 4, 5, 6, 7], [1, 1, 0, 1, 1, 1, 0])
    # time   1  2  3  4  5  6  7
    #        1  1  0  1  1  1  0
    #        (2 rows)  [=======)   only the 3-row frame passes "3 rows": frame_id 4, its start
    out = threshold_frames_reference(df, "3 rows")
    assert finals(out) == [(4, 6, 7, 3, 0)]
    assert out["frame_id"].tolist() == [4]


def test_min_duration_in_rows_counts_bridged_missing() -> None:
    # time   1  2  3  4
    #        1  m  1  0
    #        [=======)       3 tuples including the bridged missing row: passes "3 rows"
    df = stream([1, 2, 3, 4], [1, -1, 1, 0])
    assert finals(threshold_frames_reference(df, 3, missing="satisfying")) == [(1, 3, 4, 3, 1)]
    assert threshold_frames_reference(df, 3).empty


def test_min_duration_in_time_is_last_minus_start() -> None:
    df = stream([0, 10, 20, 30], [1, 1, 1, 0])
    # time   0    10   20   30
    #        1    1    1    0
    #        [=============)      last - start = 20
    assert finals(threshold_frames_reference(df, "20 us")) == [(0, 20, 30, 3, 0)]
    assert threshold_frames_reference(df, "21 us").empty


def test_frame_ids_are_per_key() -> None:
    a = stream([1, 2, 3, 4, 5], [1, 0, 1, 0, 1], key="a")
    b = stream([1, 2, 3], [0, 1, 1], key="b")
    df = pd.concat([b, a]).sort_values("time", kind="stable")
    # a: time 1  2  3  4  5          b: time 1  2  3
    #         1  0  1  0  1                  0  1  1
    #         [) id1 [) id3 [) id5              [====) id2
    out = threshold_frames_reference(df, "1 rows")
    assert out["key"].tolist() == ["a", "a", "a", "b"]
    assert out["frame_id"].tolist() == [1, 3, 5, 2]
    assert out["start"].tolist() == [1, 3, 5, 2]


# --------------------------------------------------------------------------------------------
# Partial fragments
# --------------------------------------------------------------------------------------------


def test_no_partials_without_fragment_every() -> None:
    # time   1  2  3  4
    #        1  1  1  0
    #        [=======)        only the final row
    out = threshold_frames_reference(stream([1, 2, 3, 4], [1, 1, 1, 0]), "1 rows")
    assert out["status"].tolist() == ["final"]


def test_fragments_anchor_then_every_f_rows() -> None:
    df = stream(list(range(1, 9)), [1, 1, 1, 1, 1, 1, 1, 0])
    # time   1  2  3  4  5  6  7  8
    #        1  1  1  1  1  1  1  0
    #              A     P     P        anchor at 3 rows (t=3), then every 2 rows
    #        [====================)
    out = threshold_frames_reference(df, "3 rows", fragment_every="2 rows")
    assert partials(out) == [(1, 3, 3, 0), (1, 5, 5, 0), (1, 7, 7, 0)]
    assert finals(out) == [(1, 7, 8, 7, 0)]
    assert out["status"].tolist() == ["partial"] * 3 + ["final"]


def test_fragments_crossing_several_thresholds_emit_one_row() -> None:
    df = stream([0, 10, 20, 55, 58, 70], [1, 1, 1, 1, 1, 0])
    # time   0    10   20   ...   55  58   70
    #        1    1    1          1   1    0
    #             A    P          P         anchor at 10 us; F = 10 us after it:
    #                                        t=20 crosses 10; t=55 crosses 20, 30, 40 (one row);
    #                                        t=58 (48) does not reach the next threshold 50
    out = threshold_frames_reference(df, "10 us", fragment_every="10 us")
    assert partials(out) == [(0, 10, 2, 0), (0, 20, 3, 0), (0, 55, 4, 0)]
    assert finals(out) == [(0, 58, 70, 5, 0)]


def test_fragments_only_on_known_satisfying_elements() -> None:
    df = stream([1, 2, 3, 4, 5], [1, 1, -1, 1, 0])
    # time   1  2  3  4  5
    #        1  1  m  1  0
    #           A  -  P         the missing element never carries a partial; the one at t=4
    #        [==========)       counts the bridged element
    out = threshold_frames_reference(df, "2 rows", missing="satisfying", fragment_every="1 rows")
    assert partials(out) == [(1, 2, 2, 0), (1, 4, 4, 1)]


def test_fragment_anchor_counts_bridged_missing_in_rows() -> None:
    # time   1  2  3  4
    #        1  m  1  0
    #              A          3 elements so far at t=3 (one missing): anchor for "3 rows"
    df = stream([1, 2, 3, 4], [1, -1, 1, 0])
    out = threshold_frames_reference(df, "3 rows", missing="satisfying", fragment_every="5 rows")
    assert partials(out) == [(1, 3, 3, 1)]


def test_no_partials_for_frames_below_min_duration() -> None:
    df = stream([1, 2, 3, 4, 5, 6], [1, 1, 0, 1, 1, 1])
    # time   1  2  3  4  5  6
    #        1  1  0  1  1  1
    #        (too short)     A      only the second frame (frame_id 4) emits
    out = threshold_frames_reference(df, "3 rows", fragment_every="1 rows")
    assert partials(out) == [(4, 6, 3, 0)]
    assert finals(out) == [(4, 6, 7, 3, 0)]


def test_partials_of_several_frames_sorted_by_key_frame_then_final() -> None:
    df = stream([1, 2, 3, 4, 5, 6], [1, 1, 0, 1, 1, 0])
    # time   1  2  3  4  5  6
    #        1  1  0  1  1  0
    #        A  P     A  P
    out = threshold_frames_reference(df, "1 rows", fragment_every="1 rows")
    assert list(zip(out["frame_id"], out["status"], out["last"], strict=True)) == [
        (1, "partial", 1),
        (1, "partial", 2),
        (1, "final", 2),
        (4, "partial", 4),
        (4, "partial", 5),
        (4, "final", 5),
    ]


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------


def test_bad_inputs_are_rejected_with_clear_messages() -> None:
    df = stream([1, 2], [1, 0])
    with pytest.raises(ValueError, match="`missing` must be one of"):
        threshold_frames_reference(df, "1 rows", missing="maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`min_duration` must be a positive duration"):
        threshold_frames_reference(df, "0 rows")
    with pytest.raises(ValueError, match="`schedule` must be a positive duration"):
        threshold_frames_reference(df, "1 rows", schedule="3 rows")
    with pytest.raises(ValueError, match=r"`df.value` must be in \{1, 0, -1\}; got \[2\]"):
        threshold_frames_reference(stream([1], [2]), "1 rows")
    with pytest.raises(ValueError, match="`df.time` must be int64"):
        threshold_frames_reference(df.assign(time=[1.0, 2.0]), "1 rows")
    with pytest.raises(ValueError, match="missing \\['value'\\]"):
        threshold_frames_reference(df.drop(columns="value"), "1 rows")


def test_empty_input_gives_typed_empty_output() -> None:
    out = threshold_frames_reference(stream([], []), "1 rows")
    assert out.empty
    assert str(out["end"].dtype) == "Int64"


# --------------------------------------------------------------------------------------------
# Properties of the oracle on random streams
# --------------------------------------------------------------------------------------------


def _regex_frames(values: list[int], missing: str) -> list[tuple[int, int]]:
    """(first, last) indices of frames found by a regular expression: a second formulation."""
    text = "".join({1: "1", 0: "0", -1: "m"}[v] for v in values)
    pattern = r"1+" if missing == "unsatisfied" else r"1(?:[1m]*1)?"
    return [(m.start(), m.end() - 1) for m in re.finditer(pattern, text)]


@FAST
@given(
    keyed_streams(),
    st.sampled_from(["unsatisfied", "satisfying"]),
    st.sampled_from([None, BASE_STEP]),
)
def test_finals_match_a_regex_formulation(df: pd.DataFrame, missing: str, period: int | None):
    out = threshold_frames_reference(df, "1 rows", missing=missing, schedule=period)
    for key, rows in df.groupby("key"):
        expanded = expand_schedule(list(zip(rows["time"], rows["value"], strict=True)), period)
        times = [int(t) for t, _ in expanded]
        values = [int(v) for _, v in expanded]
        expected = []
        for first, last in _regex_frames(values, missing):
            end = times[last + 1] if last + 1 < len(times) else times[last] + 1
            n_missing = values[first : last + 1].count(-1)
            expected.append((times[first], times[last], end, last - first + 1, n_missing))
        assert finals(out[out["key"] == key]) == expected


@FAST
@given(
    keyed_streams(),
    durations(),
    st.sampled_from(["unsatisfied", "satisfying"]),
    st.sampled_from([None, BASE_STEP]),
    durations(),
)
def test_oracle_invariants(df, min_duration, missing, period, fragment_every) -> None:
    out = threshold_frames_reference(
        df, min_duration, missing=missing, schedule=period, fragment_every=fragment_every
    )
    satisfying = set(zip(df["key"], df["time"], df["value"], strict=True))
    for key, frames in out.groupby("key"):
        fin = frames[frames["status"] == "final"]
        # frame ids are the frames' starts, frames disjoint and ordered: last < end <= next start
        assert fin["frame_id"].tolist() == fin["start"].tolist()
        assert (fin["start"] <= fin["last"]).all() and (fin["last"] < fin["end"]).all()
        assert (fin["end"].to_numpy()[:-1] <= fin["start"].to_numpy()[1:]).all()
        for r in fin.itertuples():
            # starts and ends on a real satisfying row; passes min_duration
            assert (key, r.start, 1) in satisfying and (key, r.last, 1) in satisfying
            size = r.n_tuples if min_duration.kind == "rows" else r.last - r.start
            assert size >= min_duration.amount
            assert r.n_missing <= max(0, r.n_tuples - 2)
            if missing == "unsatisfied":
                assert r.n_missing == 0
            part = frames[(frames["status"] == "partial") & (frames["frame_id"] == r.frame_id)]
            # at least the anchor; partials grow strictly, end on satisfying rows, within frame
            assert len(part) >= 1
            assert part["last"].is_monotonic_increasing and part["last"].is_unique
            assert (part["start"] == r.start).all() and (part["last"] <= r.last).all()
            assert all((key, t, 1) in satisfying for t in part["last"])
            first = part.iloc[0]
            anchor_size = first.n_tuples if min_duration.kind == "rows" else first["last"] - r.start
            assert anchor_size >= min_duration.amount


@FAST
@given(keyed_streams(max_rows=30), st.sampled_from([None, BASE_STEP]))
def test_satisfying_frames_cover_unsatisfied_frames(df: pd.DataFrame, period: int | None):
    # bridging can only merge frames: every strict frame lies inside a bridged one
    strict = threshold_frames_reference(df, "1 rows", schedule=period)
    loose = threshold_frames_reference(df, "1 rows", missing="satisfying", schedule=period)
    for r in strict.itertuples():
        same = loose[loose["key"] == r.key]
        assert ((same["start"] <= r.start) & (r.last <= same["last"])).sum() == 1


@FAST
@given(keyed_streams(), st.randoms(use_true_random=False))
def test_oracle_ignores_interleaving_of_keys(df: pd.DataFrame, rnd) -> None:
    # only each key's own row order matters: permute the keys' blocks
    keys = sorted(df["key"].unique())
    rnd.shuffle(keys)
    regrouped = pd.concat([df[df["key"] == k] for k in keys]) if keys else df
    a = threshold_frames_reference(df, "2 rows", schedule=BASE_STEP, fragment_every="2 rows")
    b = threshold_frames_reference(regrouped, "2 rows", schedule=BASE_STEP, fragment_every="2 rows")
    pd.testing.assert_frame_equal(a, b)


# --------------------------------------------------------------------------------------------
# Strategies and helpers
# --------------------------------------------------------------------------------------------


@FAST
@given(keyed_streams(with_missing=False, with_gaps=False))
def test_streams_without_gaps_or_missing(df: pd.DataFrame) -> None:
    # k0: 1---1---0---1   gaps within (P/2, 3P/2): a schedule of P infers no absence
    assert set(df["value"]) <= {0, 1}
    for _, rows in df.groupby("key"):
        expanded = expand_schedule(list(zip(rows["time"], rows["value"], strict=True)), BASE_STEP)
        assert len(expanded) == len(rows) + 1


@FAST
@given(keyed_streams())
def test_streams_are_time_ordered_with_increasing_times_per_key(df: pd.DataFrame) -> None:
    assert df["time"].is_monotonic_increasing
    assert (df.groupby("key")["time"].diff().dropna() > 0).all()


@FAST
@given(st.data())
def test_split_frame_round_trips(data: st.DataObject) -> None:
    df = data.draw(keyed_streams(max_rows=20))
    cuts = data.draw(split_points(len(df)))
    pieces = split_frame(df, cuts)
    # rows 0 1 2 | 3 4 || 5 ...   len(cuts) + 1 pieces, concatenation == input
    assert len(pieces) == len(cuts) + 1
    assert [len(p) for p in pieces] == np.diff([0, *cuts, len(df)]).tolist()
    pd.testing.assert_frame_equal(pd.concat(pieces, ignore_index=True), df, check_index_type=False)


@FAST
@given(keyed_streams(), st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_shuffled_within_bounds_lateness(df: pd.DataFrame, max_delay: int, seed: int) -> None:
    arrived = shuffled_within(df, max_delay, seed=seed)
    # event time:   10  20  30  40      arrival: 20 10 40 30 -> no row is more than max_delay
    # behind the largest event time seen before it (a watermark of max - max_delay drops none)
    assert (arrived["time"].cummax() - arrived["time"] <= max_delay).all()
    back = arrived.sort_values(["time", "key"], kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(back, df)


def test_shuffled_within_disorders_and_is_seeded() -> None:
    df = stream(list(range(0, 1000, 10)), [1] * 100)
    a = shuffled_within(df, 30, seed=7)
    # times 0 10 20 30 ... arrive e.g. 0 20 10 30 ...: some disorder, same for the same seed
    assert not a["time"].is_monotonic_increasing
    pd.testing.assert_frame_equal(a, shuffled_within(df, 30, seed=7))
    pd.testing.assert_frame_equal(shuffled_within(df, 0, seed=7), df)
    with pytest.raises(ValueError, match="`max_delay` must be >= 0"):
        shuffled_within(df, -1)


def test_split_frame_rejects_bad_cuts() -> None:
    with pytest.raises(ValueError, match="`cut_points` must be sorted and within 0..2"):
        split_frame(stream([1, 2], [1, 1]), [3])


# --------------------------------------------------------------------------------------------
# Routers dataset
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def routers() -> tuple[pd.DataFrame, pd.DataFrame]:
    return router_readings(), router_incidents()


def _as_micros(s: pd.Series) -> np.ndarray:
    return s.astype("int64").to_numpy()


def test_routers_shape_and_types(routers) -> None:
    df, _ = routers
    assert list(df.columns) == ["router", "time", "loss_rate"]
    assert str(df["time"].dtype) == "datetime64[us, UTC]"
    assert df["loss_rate"].dtype == np.float64
    assert df["router"].nunique() == 50 and df["router"].str.fullmatch(r"r\d{3}").all()
    t = _as_micros(df["time"]) - _as_micros(df["time"]).min()
    # reports on the 30 s grid over one day: 0, 30 s, ..., 86,370 s
    assert (t % 30_000_000 == 0).all() and t.max() == (2880 - 1) * 30_000_000
    assert not df.duplicated(["router", "time"]).any()


def test_routers_missing_rate_is_about_two_percent(routers) -> None:
    df, _ = routers
    scheduled = 50 * 2880
    assert abs(1 - len(df) / scheduled - 0.02) < 0.003


def test_routers_rows_out_of_order_but_mostly_in_order(routers) -> None:
    df, _ = routers
    t = _as_micros(df["time"])
    # arrival:  ..., t, t, t+30s, [t-60s], ...   about 1% of rows arrive late
    assert 0.0 < (np.diff(t) < 0).mean() < 0.02
    steps_back = df.groupby("router")["time"].diff() < pd.Timedelta(0)
    late_per_router = steps_back.groupby(df["router"]).sum()
    assert (late_per_router > 0).sum() > 25  # out of order within routers, not only across them
    ordered = router_readings(disorder_rate=0.0)
    assert ordered["time"].is_monotonic_increasing


def test_routers_are_deterministic_per_seed() -> None:
    a = router_readings(n_routers=5, duration="2 hours", seed=11)
    pd.testing.assert_frame_equal(a, router_readings(n_routers=5, duration="2 hours", seed=11))
    b = router_readings(n_routers=5, duration="2 hours", seed=12)
    assert not a["loss_rate"].equals(b["loss_rate"])
    pd.testing.assert_frame_equal(
        router_incidents(n_routers=5, duration="2 hours", seed=11),
        router_incidents(n_routers=5, duration="2 hours", seed=11, missing_rate=0.3),
    )


def test_routers_incidents_are_exactly_the_high_loss_reports(routers) -> None:
    df, inc = routers
    assert len(inc) > 50
    assert inc["n_reports"].min() >= 2 and inc["n_reports"].max() <= 120
    assert inc["n_reports"].max() > 60  # lengths vary widely
    # r000:  low low [HIGH HIGH ... HIGH) low low ...  high exactly inside [start, end)
    merged = df.merge(inc, on="router", how="left")
    inside = (merged["time"] >= merged["start"]) & (merged["time"] < merged["end"])
    n_inside = inside.groupby([merged["router"], merged["time"]]).any()
    loss = df.set_index(["router", "time"])["loss_rate"].reindex(n_inside.index)
    assert ((loss > 0.003) == n_inside).all()
    # baseline around 0.0005..0.0015, capped at 0.7 x threshold
    assert loss[~n_inside].between(0.0001, 0.0021).mean() > 0.99
    assert 0.0005 < loss[~n_inside].median() < 0.0015


def test_routers_frames_recover_complete_incidents() -> None:
    df = router_readings(n_routers=8, seed=5)
    inc = router_incidents(n_routers=8, seed=5)
    stream_df = pd.DataFrame(
        {
            "key": df["router"],
            "time": _as_micros(df["time"]),
            "value": (df["loss_rate"] > 0.003).astype("int8"),
        }
    )
    out = threshold_frames_reference(stream_df, "1 rows", schedule="30 seconds")
    # schedule 30 s; an incident whose reports all arrived is exactly one frame:
    #   low [H H H H H) low       start = first H, last = last H, end = next report
    present = set(zip(stream_df["key"], stream_df["time"], strict=True))
    frames = set(zip(out["key"], out["start"], out["last"], out["end"], strict=True))
    period = 30_000_000
    complete = 0
    for r in inc.itertuples():
        s, e = int(r.start.value // 1000), int(r.end.value // 1000)
        if all((r.router, t) in present for t in range(s, e, period)):
            complete += 1
            assert (r.router, s, e - period, e) in frames
    assert complete > 0.5 * len(inc)
    # and every frame lies inside one incident
    for f in out.itertuples():
        own = inc[inc["router"] == f.key]
        s, e = _as_micros(own["start"]), _as_micros(own["end"])
        assert ((s <= f.start) & (f.end <= e)).sum() == 1


def test_routers_scale_parameters() -> None:
    df = router_readings(n_routers=1000, n_reports=20, missing_rate=0.0, disorder_rate=0.0)
    # 1000 routers x 20 reports, names padded to the widest id
    assert len(df) == 20_000 and df["router"].iloc[-1] == "r999"
    wide = router_readings(n_routers=1001, n_reports=2, missing_rate=0.0, disorder_rate=0.0)
    assert wide["router"].iloc[-1] == "r1000"
    with pytest.raises(ValueError, match="`missing_rate` must be in \\[0, 1\\)"):
        router_readings(missing_rate=1.5)
