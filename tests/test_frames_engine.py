"""One framing engine: threshold frames are a framing of it, its options (extent, duplicates)
hold for every framing, its modules import without a cycle, and threshold state written by
older windowkit (tests/data, see tests/data/README.md) loads and goes on."""

from __future__ import annotations

import ast
import math
import pathlib

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from windowkit.core.chunks import decode_chunks
from windowkit.core.frames import (
    AggregateFramer,
    BoundaryFramer,
    CustomFramer,
    DeltaFramer,
    IncreasingTrend,
    ThresholdFramer,
    ThresholdFraming,
)
from windowkit.core.operator import EventTimeRunner
from windowkit.reference.framings import framings_reference
from windowkit.testing.frames import open_frame_ids, with_todays_ids
from windowkit.testing.streams import BASE_STEP, durations, keyed_streams

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DATA = pathlib.Path(__file__).parent / "data"
VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -1.0, math.nan]


@st.composite
def streams_with_ties(draw: st.DrawFn) -> pd.DataFrame:
    """Keyed float streams where some rows share their key's time with other rows."""
    df = draw(keyed_streams(max_rows=25))
    assume(len(df) > 0)
    picks = draw(st.lists(st.integers(0, len(df) - 1), max_size=12))
    both = pd.concat([df, df.iloc[picks]], ignore_index=True)
    values = draw(st.lists(st.sampled_from(VALUES), min_size=len(both), max_size=len(both)))
    return both.assign(value=np.array(values, dtype=np.float64))


@st.composite
def framings(draw: st.DrawFn) -> tuple[str, dict, object]:
    """(reference kind, its parameters, framer factory) for one framing, threshold included."""
    kind = draw(st.sampled_from(["threshold", "threshold-codes", "boundary", "delta",
                                 "aggregate", "increasing"]))
    if kind == "threshold":
        return kind, {}, lambda **kw: CustomFramer(ThresholdFraming(), **kw)
    if kind == "threshold-codes":  # the threshold framer takes predicate values
        return "threshold", {}, ThresholdFramer
    if kind in ("boundary", "delta"):
        x = draw(st.sampled_from([0.5, 1.0, 2.5]))
        cls = BoundaryFramer if kind == "boundary" else DeltaFramer
        return kind, {"x": x}, lambda **kw: cls(x, **kw)
    if kind == "aggregate":
        params = {"func": draw(st.sampled_from(["count", "sum", "mean", "min", "max"])),
                  "op": draw(st.sampled_from(["<", "<=", ">", ">="])),
                  "x": draw(st.sampled_from([0.0, 1.0, 2.0, 3.5]))}
        return kind, params, lambda **kw: AggregateFramer(**params, **kw)
    return kind, {}, lambda **kw: CustomFramer(IncreasingTrend(), **kw)


def canonical(out: pd.DataFrame) -> pd.DataFrame:
    out = out.assign(_final=out["status"] == "final")
    out = out.sort_values(["key", "frame_id", "_final", "last"], kind="stable")
    return out.drop(columns="_final").reset_index(drop=True).astype({"key": object,
                                                                      "end": "Int64"})


def as_input(df: pd.DataFrame, make) -> pd.DataFrame:
    if make is not ThresholdFramer:
        return df
    codes = np.where(np.isnan(df["value"]), -1, df["value"] > 0).astype(np.int8)
    return df.assign(value=codes)


@SETTINGS
@given(data=st.data(), df=streams_with_ties(), framing=framings())
def test_every_framing_takes_extent_and_duplicates_in_any_arrival_order(data, df, framing):
    # Ties of key and time settle by the framing's order (threshold: unsatisfied, missing,
    # satisfying; others by value), whatever the arrival order; any/all for truth values.
    kind, params, make = framing
    minimal = kind == "aggregate" and params["op"] in (">", ">=")
    opts = {"min_duration": data.draw(durations()),
            "missing": data.draw(st.sampled_from(["unsatisfied", "satisfying"])),
            "schedule": data.draw(st.sampled_from([None, BASE_STEP])),
            "fragment_every": None if minimal else data.draw(st.one_of(st.none(), durations())),
            "extent": data.draw(st.sampled_from(["conservative", "liberal"])),
            "duplicates": data.draw(st.sampled_from(
                ["keep", "any", "all"] if kind == "threshold" else ["keep"]))}
    expected = canonical(framings_reference(df, kind, params, **opts))
    seed = data.draw(st.integers(0, 2**16))
    shuffled = df.iloc[np.random.default_rng(seed).permutation(len(df))].reset_index(drop=True)
    framer = make(**opts)
    out = pd.concat([framer.process(as_input(shuffled, make)), framer.finish()])
    pd.testing.assert_frame_equal(canonical(out), expected)


def test_liberal_threshold_frames_reach_back_to_the_last_unsatisfying_report():
    # time   1  2  3  4  5  6  7  8  9  10     F1 (temp > 32), liberal extent:
    # temp  30 31 33 34 30 34 33 34 35 32     [2, 5) and [5, 10)
    #          [--------)[--------------)
    temps = np.array([30, 31, 33, 34, 30, 34, 33, 34, 35, 32])
    out = ThresholdFramer(extent="liberal").update(np.arange(1, 11), temps > 32)
    assert out[["start", "last", "end"]].values.tolist() == [[2, 4, 5], [5, 9, 10]]


@pytest.mark.parametrize("make", [
    lambda d: BoundaryFramer(1.0, duplicates=d),
    lambda d: DeltaFramer(1.0, duplicates=d),
    lambda d: AggregateFramer("sum", "<", 3.0, duplicates=d),
    lambda d: CustomFramer(IncreasingTrend(), duplicates=d),
])
@pytest.mark.parametrize("duplicates", ["any", "all"])
def test_any_or_all_duplicates_are_refused_where_values_are_not_truth_values(make, duplicates):
    with pytest.raises(ValueError, match=rf"`duplicates` must be 'keep' for \w+: 'any' "
                                         rf"and 'all' apply to truth values .*'{duplicates}'"):
        make(duplicates)


def test_duplicates_outside_the_choices_are_refused():
    with pytest.raises(ValueError, match="`duplicates` must be one of 'keep', 'any', 'all'; "
                                         "got 'some'"):
        CustomFramer(ThresholdFraming(), duplicates="some")


def _imports(path: pathlib.Path) -> set[str]:
    """The windowkit.core.frames modules ``path`` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m.rsplit(".", 1)[-1] for m in found if m.startswith("windowkit.core.frames.")}


def test_the_frames_modules_import_each_other_without_a_cycle():
    # the framing contract is its own module: the engine and the framings both import it
    package = pathlib.Path(__file__).parent.parent / "windowkit" / "core" / "frames"
    graph = {p.stem: _imports(p) for p in package.glob("*.py") if p.stem != "__init__"}
    assert "framing" in graph["_engine"] and "framing" in graph["threshold"]
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import cycle: {' -> '.join((*path, module))}"
        if module in done:
            return
        for imported in graph.get(module, ()):
            visit(imported, (*path, module))
        done.add(module)

    for module in graph:
        visit(module, ())


# -- state written by windowkit 7328167 (see tests/data/README.md) -----------------------------
SPEC = {"min_duration": "2 rows", "missing": "satisfying", "schedule": 10,
        "fragment_every": "2 rows"}


@pytest.fixture(scope="module")
def older_state() -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    stored = np.load(DATA / "threshold_v1_state.npz")
    blobs = {name: stored[name].tobytes() for name in stored.files
             if not name.startswith("second_")}
    second = pd.DataFrame({"key": stored["second_key"].astype(object),
                           "time": stored["second_time"], "value": stored["second_value"]})
    expected = pd.read_csv(DATA / "threshold_v1_expected.csv", dtype={"end": "Int64"})
    return blobs, second, expected


def _expected(expected: pd.DataFrame, source: str, still_open: dict) -> pd.DataFrame:
    """That commit's rows, with today's frame ids (frames open in its state keep theirs)."""
    older = expected[expected["source"] == source].drop(columns="source")
    return canonical(with_todays_ids(older, still_open))


def test_threshold_bytes_of_older_windowkit_load_and_frame_on(older_state):
    blobs, second, expected = older_state
    framer = ThresholdFramer.from_bytes(blobs["framer"])
    assert framer.spec == ThresholdFramer(**SPEC).spec and framer.open_frames > 0
    assert framer.to_bytes() == blobs["framer"]  # the same bytes, read and written again
    still_open = open_frame_ids(framer)
    out = pd.concat([framer.process(second), framer.finish()], ignore_index=True)
    pd.testing.assert_frame_equal(canonical(out), _expected(expected, "framer", still_open))


def test_a_runner_of_older_windowkit_with_buffered_rows_loads_and_frames_on(older_state):
    blobs, second, expected = older_state
    runner = EventTimeRunner.from_bytes(blobs["runner"])
    assert runner.buffered_rows > 0
    still_open = open_frame_ids(runner.operator)
    out, late = runner.push(second, int(second["time"].max()) - 25)
    assert late.empty
    got = canonical(pd.concat([out, runner.finish()], ignore_index=True))
    pd.testing.assert_frame_equal(got, _expected(expected, "runner", still_open))


def test_threshold_chunks_of_older_windowkit_load_into_the_engine(older_state):
    # a streaming checkpoint keeps a split shard's keys in chunks laid out as key_state()
    blobs, second, expected = older_state
    chunks = [blob for name, blob in blobs.items() if name.startswith("chunk_")]
    framer = ThresholdFramer(**SPEC)
    framer.load_key_state(*decode_chunks(chunks, framer.key_state()[1]))
    still_open = open_frame_ids(framer)
    out = pd.concat([framer.process(second), framer.finish()], ignore_index=True)
    pd.testing.assert_frame_equal(canonical(out), _expected(expected, "framer", still_open))


# -- keys whose frames closed leave the state (issue #39, point 9) ----------------------------
def _comers_and_goers(waves: int, keys: int) -> list[pd.DataFrame]:
    """Wave ``w``: ``keys`` new keys, each with two rows 10 µs apart that make one frame
    (values 1.0 then 1.5: true, within any delta of 1, a sum reaching 2), never seen again."""
    out = []
    for w in range(waves):
        names = np.array([f"w{w}k{k}" for k in range(keys)], dtype=object)
        t0 = 100 * w
        out.append(pd.DataFrame({"key": np.repeat(names, 2),
                                 "time": np.tile([t0, t0 + 10], keys),
                                 "value": np.tile([1.0, 1.5], keys)}))
    return out


@pytest.mark.parametrize("make", [
    lambda: ThresholdFramer("2 rows", schedule=10),
    lambda: DeltaFramer(1.0, schedule=10),
    lambda: AggregateFramer("sum", ">=", 2.0, schedule=10),  # minimal: waits for its end
    lambda: CustomFramer(IncreasingTrend(), schedule=10, fragment_every="1 rows"),
], ids=["threshold", "delta", "aggregate-minimal", "custom"])
def test_keys_whose_frames_closed_leave_the_state_issue_39(make):
    # wave w:  t = 100w    100w+10   (the report due at 100w+20 is absent: the watermark at
    #          [====================)  100w+50 shows it, and the frame ends there)
    # Afterwards each key owes nothing: no frame open, nothing waiting. The state must hold
    # the live keys (none), not every key ever seen; the output is the one-batch output.
    waves = _comers_and_goers(4, 50)
    runner, outputs, sizes = EventTimeRunner(make()), [], []
    for w, wave in enumerate(waves):
        out, late = runner.push(wave, 100 * w + 50)
        assert late.empty and runner.operator.open_frames == 0
        outputs.append(out)
        keys, _ = runner.operator.key_state()
        assert len(keys) == 0 and runner.operator.n_keys == 0
        sizes.append(len(runner.operator.to_bytes()))
        runner = EventTimeRunner.from_bytes(runner.to_bytes())
    assert sizes == sizes[:1] * len(sizes)
    whole = make()
    alone = pd.concat([whole.process(pd.concat(waves, ignore_index=True)), whole.finish()])
    assert (alone["status"] == "final").sum() == 4 * 50
    pd.testing.assert_frame_equal(canonical(pd.concat(outputs)), canonical(alone))


def test_a_key_that_comes_back_after_leaving_frames_as_if_it_had_stayed():
    # key a:  t  0   10   (absent 20)   ...   200  210
    #            [=======)                     [=======)   ids 0 and 200, the frames' starts
    framer = ThresholdFramer("2 rows", schedule=10)
    first = framer.process(pd.DataFrame({"key": "a", "time": [0, 10], "value": [1, 1]}))
    first = pd.concat([first, framer.advance(50)])
    assert framer.n_keys == 0
    again = framer.process(pd.DataFrame({"key": "a", "time": [200, 210], "value": [1, 1]}))
    again = pd.concat([again, framer.finish()])
    rows = pd.concat([first, again])[["frame_id", "start", "end"]].values.tolist()
    assert rows == [[0, 0, 20], [200, 200, 220]]


def test_frames_starting_at_one_instant_get_distinct_increasing_ids():
    # key a, tied rows at t=5 in three bands of 10, then t=6 in a fourth band:
    #   t=5: 1 | 15 | 25      t=6: 35      -> frames [5,5) [5,5) [5,6) [6,7)
    # ids: the start, or one past the previous id when starts tie: 5, 6, 7, then 8
    df = pd.DataFrame({"key": "a", "time": [5, 5, 5, 6], "value": [25.0, 1.0, 15.0, 35.0]})
    framer = BoundaryFramer(10.0)
    out = pd.concat([framer.process(df), framer.finish()])
    assert out[["frame_id", "start"]].values.tolist() == [[5, 5], [6, 5], [7, 5], [8, 6]]
    ref = framings_reference(df, "boundary", {"x": 10.0}, "1 rows")
    assert ref["frame_id"].tolist() == [5, 6, 7, 8]


def test_a_liberal_extent_keeps_a_settled_key_its_next_start_is_the_last_report():
    # key a:  t  0  10  20        the frame [10, 20) reaches back to the report at 0; after
    #            0   1   0        it closes, a's next frame reaches back to a's last report
    framer = ThresholdFramer("1 rows", extent="liberal")
    framer.process(pd.DataFrame({"key": "a", "time": [0, 10, 20], "value": [0, 1, 0]}))
    framer.advance(30)
    assert framer.n_keys == 1
    out = framer.process(pd.DataFrame({"key": "a", "time": [40, 50], "value": [1, 0]}))
    assert out[["frame_id", "start", "end"]].values.tolist() == [[40, 20, 50]]


def test_key_deadlines_follow_key_state_while_settled_keys_stay_in_memory():
    # k0:  t 0 (true) 5 (false): its frame closed at 5; k1..k9: t 0 (true), open, due at 14.
    # At watermark 5 k0 is settled, one key in ten: it stays in memory (dropped once a
    # quarter of those held), out of key_state(), and out of key_deadlines() with it.
    framer = ThresholdFramer("1 rows", schedule=10)
    keys = [f"k{i}" for i in range(10)]
    framer.process(pd.DataFrame({"key": [*keys, "k0"], "time": [0] * 10 + [5],
                                 "value": [1] * 10 + [0]}))
    assert framer.advance(5).empty
    held, _ = framer.key_state()
    assert held.tolist() == keys[1:]
    assert framer.key_deadlines().tolist() == [14] * 9


def test_frames_before_1970_take_their_negative_start_as_id():
    # key a:  t  -30  -20  -10  -1   0   5       frames [-30, -10) and [-1, 5)
    #             1    1    0    1   1   0       ids -30 and 0: -1 means "no id" in state
    df = pd.DataFrame({"key": "a", "time": [-30, -20, -10, -1, 0, 5],
                       "value": [1.0, 1.0, 0.0, 1.0, 1.0, 0.0]})
    framer = CustomFramer(ThresholdFraming(), min_duration="2 rows")
    out = framer.process(df)
    assert out[["frame_id", "start", "end"]].values.tolist() == [[-30, -30, -10], [0, -1, 5]]
    ref = framings_reference(df, "threshold", {}, "2 rows")
    assert ref["frame_id"].tolist() == [-30, 0]
