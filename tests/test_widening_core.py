"""WindowWidening against the brute-force oracle; the paper's Lemma 1, Theorems 1 and 2;
batch-split invariance; watermarks; state bytes.

Timelines in comments: ``|`` batch boundaries of the level named, letters are rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkit.core.operator import EventTimeRunner
from windowkit.core.serialization import StateFormatError, pack_state
from windowkit.core.widening import (
    Detector,
    EpisodeDetector,
    WideningConfig,
    WindowWidening,
    theorem2_bound,
)
from windowkit.reference.widening import reference_windows, widening_reference
from windowkit.testing.streams import shuffled_within, split_frame, split_points

SETTINGS = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

configs = st.builds(
    WideningConfig,
    base=st.sampled_from([5, 10]),
    max_length=st.integers(1, 3),
    levels=st.integers(1, 4),
    report=st.sampled_from(["first", "all"]),
    base_chunks=st.booleans(),
)

EPISODES = ["a\nb", "a fd=$x\n{ b fd=$x ; c }", "{ a ; b }", "a\nb\nc", "c fd=1"]


@st.composite
def call_streams(draw: st.DrawFn, max_keys: int = 3, max_rows: int = 25,
                 min_gap: int = 0) -> pd.DataFrame:
    """Rows ``key, time, call, fd`` sorted by time; gaps 0..12 (ties included) per key."""
    rows = []
    for k in range(draw(st.integers(1, max_keys))):
        t = draw(st.integers(-30, 30))
        for _ in range(draw(st.integers(0, max_rows))):
            t += draw(st.integers(min_gap, max(min_gap, 12)))
            rows.append((f"k{k}", t, draw(st.sampled_from("abcd")),
                         draw(st.sampled_from([None, "1", "2"]))))
    df = pd.DataFrame(rows, columns=["key", "time", "call", "fd"])
    df = df.astype({"time": "int64"})
    return df.sort_values("time", kind="stable").reset_index(drop=True)


def canonical(out: pd.DataFrame) -> pd.DataFrame:
    cols = ["key", "detected_at", "level", "window_start", "times", "ordinals"]
    out = out.sort_values(cols, kind="stable").reset_index(drop=True)
    return out.astype({"key": object})


def run_core(df, detector, config, cuts=(), roundtrip=False) -> pd.DataFrame:
    op = WindowWidening(detector, config=config)
    outputs = []
    for piece in split_frame(df, list(cuts)):
        outputs.append(op.process(piece))
        if roundtrip:
            op = WindowWidening.from_bytes(op.to_bytes())
    outputs.append(op.finish())
    return canonical(pd.concat(outputs, ignore_index=True))


@SETTINGS
@given(df=call_streams(), config=configs, episode=st.sampled_from(EPISODES))
def test_core_equals_reference(df, config, episode):
    detector = EpisodeDetector(episode)
    expected = canonical(widening_reference(df, detector, config))
    pd.testing.assert_frame_equal(run_core(df, detector, config), expected)


@SETTINGS
@given(df=call_streams(), config=configs, episode=st.sampled_from(EPISODES), data=st.data())
def test_batch_split_with_bytes_round_trip_changes_nothing(df, config, episode, data):
    detector = EpisodeDetector(episode)
    cuts = data.draw(split_points(len(df)))
    whole = run_core(df, detector, config)
    pd.testing.assert_frame_equal(run_core(df, detector, config, cuts, roundtrip=True), whole)


@SETTINGS
@given(df=call_streams(), config=configs, delay=st.integers(0, 15), seed=st.integers(0, 99),
       data=st.data())
def test_out_of_order_rows_within_the_watermark_change_nothing(df, config, delay, seed, data):
    detector = EpisodeDetector("a\nb")
    arrived = shuffled_within(df, delay, seed=seed)
    cuts = data.draw(split_points(len(arrived)))
    runner = EventTimeRunner(WindowWidening(detector, config=config))
    outputs, seen_max = [], None
    for piece in split_frame(arrived, cuts):
        if len(piece):
            top = int(piece["time"].max())
            seen_max = top if seen_max is None else max(seen_max, top)
        # rows at the watermark itself would be late, and equal times may still come
        watermark = None if seen_max is None else seen_max - delay - 1
        out, late = runner.push(piece, watermark)
        assert len(late) == 0
        outputs.append(out)
        runner = EventTimeRunner.from_bytes(runner.to_bytes())
    outputs.append(runner.finish())
    got = canonical(pd.concat(outputs, ignore_index=True))
    pd.testing.assert_frame_equal(got, run_core(df, detector, config))


class RecordingDetector(Detector):
    """Finds nothing; records each window's row ids (column ``rid``)."""

    columns = ("rid",)

    def __init__(self) -> None:
        self.windows: list[list[int]] = []

    def detect(self, window: np.ndarray) -> list:
        self.windows.append(window[:, 0].tolist())
        return []


def _windows_seen(df: pd.DataFrame, config: WideningConfig, cuts=()) -> list[list[int]]:
    detector = RecordingDetector()
    op = WindowWidening(detector, config=config)
    for piece in split_frame(df.assign(rid=np.arange(len(df))), list(cuts)):
        op.process(piece)
    op.finish()
    return detector.windows


@SETTINGS
@given(df=call_streams(max_keys=2, max_rows=40), config=configs, data=st.data())
def test_theorem1_every_short_pattern_lies_in_a_window_the_detector_sees(df, config, data):
    # Theorem 1 with T = d_K: every run of at most L consecutive rows of a key lasting at most
    # d_K lies wholly inside one window given to the detector (whatever the batches).
    windows = [set(w) for w in _windows_seen(df, config, data.draw(split_points(len(df))))]
    L, top = config.max_length, config.max_duration
    for _, part in df.assign(rid=np.arange(len(df))).groupby("key"):
        rid, t = part["rid"].to_numpy(), part["time"].to_numpy()
        for i in range(len(rid)):
            for j in range(i, min(i + L, len(rid))):
                if t[j] - t[i] > top:
                    break
                run = set(rid[i: j + 1].tolist())
                assert any(run <= w for w in windows), (run, t[i], t[j])


@SETTINGS
@given(df=call_streams(max_keys=2, max_rows=40), config=configs)
def test_no_window_holds_more_than_4L_rows(df, config):
    config = WideningConfig(config.base, config.max_length, config.levels, config.report,
                            base_chunks=True)
    sizes = [len(w) for w in _windows_seen(df, config)]
    assert max(sizes, default=0) <= 4 * config.max_length


@SETTINGS
@given(config=configs, data=st.data())
def test_theorem2_records_given_to_the_detector_stay_within_the_bound(config, data):
    # Theorem 2's assumption: a base batch holds at most 2L rows of a key, which a minimum gap
    # between a key's rows guarantees.
    L, d0 = config.max_length, config.base
    gap = -(-(d0 - 1) // (2 * L - 1)) if L > 1 else d0
    df = data.draw(call_streams(max_keys=2, max_rows=60, min_gap=gap))
    op = WindowWidening(RecordingDetector(), config=config)
    op.process(df.assign(rid=np.arange(len(df))))
    op.finish()
    spans = df.groupby("key")["time"].agg(lambda t: t.max() - t.min())
    bound = sum(theorem2_bound(config, int(s)) for s in spans)
    assert op.records_given.sum() <= bound
    assert op.max_window_rows <= 4 * L


def test_lemma1_windows_of_a_level_cover_every_interval_of_its_batch_duration():
    # Lemma 1 on the level-k windows [b d, (b+2) d): any interval of length at most d lies
    # in one of them, however it is placed.
    config = WideningConfig(base=4, max_length=50, levels=3)
    times = np.arange(0, 64)
    for level in range(config.levels):
        d = config.level_duration(level)
        spans = [(w[2], w[0]) for w in reference_windows(times, config) if w[1] == level]
        for a in range(0, 64 - d):
            assert any(s <= a and a + d < e for s, e in spans), (level, a)


def test_a_slow_pattern_is_found_at_the_level_that_fits_it():
    #  level 0 (d=10): |a    |     |     |b    |   -> a at 1, b at 31: 30 apart
    #  level 1 (d=20): |a          |b          |   -> window [0, 40) holds both
    df = pd.DataFrame({"key": ["k", "k"], "time": [1, 31], "call": ["a", "b"]})
    config = WideningConfig(base=10, max_length=2, levels=3)
    out = run_core(df, EpisodeDetector("a\nb"), config)
    assert out[["level", "window_start", "window_end", "span"]].values.tolist() == [
        [1, 0, 40, 30]]
    config_short = WideningConfig(base=10, max_length=2, levels=1)
    assert run_core(df, EpisodeDetector("a\nb"), config_short).empty


def test_the_middle_of_a_long_batch_is_discarded_beyond_2L_rows():
    # level 1 batch [0, 20) holds a x x x x b: with L = 2 only a x and x b are kept, so the
    # level-1 window sees 4 of its 6 rows (Algorithm 2)
    df = pd.DataFrame({"key": ["k"] * 6, "time": [0, 11, 12, 13, 14, 19],
                       "call": list("axxxxb"), "rid": range(6)})
    config = WideningConfig(base=10, max_length=2, levels=2)
    windows = _windows_seen(df.drop(columns="rid"), config)
    assert [0, 1, 4, 5] in windows
    assert max(len(w) for w in windows) <= 8


def test_a_match_is_reported_once_unless_all_are_asked_for():
    df = pd.DataFrame({"key": ["k"] * 3, "time": [1, 2, 30], "call": ["a", "b", "c"]})
    first = run_core(df, EpisodeDetector("a\nb"), WideningConfig(10, 4, 4))
    every = run_core(df, EpisodeDetector("a\nb"), WideningConfig(10, 4, 4, report="all"))
    assert len(first) == 1 and first["level"].tolist() == [0]
    assert first["detected_at"].tolist() == [10]
    assert len(every) > 1 and set(every["times"]) == {"1,2"}


def test_rows_at_one_time_are_ordered_by_content_whatever_their_arrival():
    # x a a | b at times 5 5 5 | 6: the rows at 5 are ordered by their encoded content, so the
    # match (the last a before b) is the 2nd or the 3rd row at 5, by the order of the encoded
    # "a" and "x"
    x, a = EpisodeDetector("a\nb").encode(pd.DataFrame({"call": ["x", "a"]})).tolist()
    expected = "1,0" if a < x else "2,0"
    for calls in (["x", "a", "a"], ["a", "x", "a"], ["a", "a", "x"]):
        df = pd.DataFrame({"key": ["k"] * 4, "time": [5, 5, 5, 6], "call": [*calls, "b"]})
        for cuts in ([], [1], [2], [3]):
            out = run_core(df, EpisodeDetector("a\nb"), WideningConfig(10, 4, 1), cuts=cuts)
            assert out["times"].tolist() == ["5,6"]
            assert out["ordinals"].tolist() == [expected]


def test_rows_going_backwards_are_refused():
    op = WindowWidening(EpisodeDetector("a"), base=10, max_length=2, levels=1)
    op.process(pd.DataFrame({"key": ["k"], "time": [20], "call": ["a"]}))
    with pytest.raises(ValueError, match="`time` went backwards"):
        op.process(pd.DataFrame({"key": ["j"], "time": [19], "call": ["a"]}))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"base": "-1 second", "max_length": 2, "levels": 2}, "`base` must be a positive duration"),
    ({"base": 10, "max_length": 0, "levels": 2}, "`max_length` must be an integer in"),
    ({"base": 10, "max_length": 2, "levels": 0}, "`levels` must be an integer in"),
    ({"base": 10, "max_length": 2}, "exactly one of `max_duration` and `levels`"),
    ({"base": 10, "max_length": 2, "levels": 2, "report": "some"}, "`report` must be one of"),
])
def test_invalid_parameters_name_themselves(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WindowWidening(EpisodeDetector("a"), **kwargs)


def _state() -> bytes:
    op = WindowWidening(EpisodeDetector("a\nb"), base=10, max_length=2, levels=3)
    op.process(pd.DataFrame({"key": ["k", "k", "j"], "time": [1, 2, 3],
                             "call": ["a", "b", "a"]}))
    return op.to_bytes()


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "tag"])
def test_corrupt_bytes_raise_state_format_error(damage):
    blob = bytearray(_state())
    if damage == "truncate":
        blob = blob[: len(blob) // 2]
    elif damage == "flip":
        blob[len(blob) - 3] ^= 0xFF
    elif damage == "empty":
        blob = bytearray()
    else:
        blob[5:13] = b"OTHERTAG"
    with pytest.raises(StateFormatError, match="WindowWidening"):
        WindowWidening.from_bytes(bytes(blob))


@pytest.mark.parametrize("field", ["store_time", "pending_refs", "keys", "detector"])
def test_consistent_checksum_but_inconsistent_state_raises_state_format_error(field):
    from windowkit.core.serialization import unpack_state

    meta, arrays = unpack_state(_state(), WindowWidening.FORMAT_TAG,
                                WindowWidening.FORMAT_VERSION)
    if field == "detector":
        meta["detector"] = "windowkit.core.operator:EventTimeRunner"
    elif field == "pending_refs":
        arrays[field] = arrays[field] + 1000
    else:
        arrays[field] = arrays[field][:-1]
    blob = pack_state(WindowWidening.FORMAT_TAG, WindowWidening.FORMAT_VERSION, meta, arrays)
    with pytest.raises(StateFormatError, match="WindowWidening"):
        WindowWidening.from_bytes(blob)


def test_memory_stays_bounded_on_a_dense_key():
    # one key, one row per time unit for 20,000 units: the rows held stay near
    # levels * 4L + a base batch, far below the stream
    n = 20_000
    df = pd.DataFrame({"key": "k", "time": np.arange(n), "call": "x"})
    op = WindowWidening(EpisodeDetector("a\nb"), base=8, max_length=4, levels=12)
    for piece in np.array_split(np.arange(n), 40):
        op.process(df.iloc[piece])
    assert op.peak_rows_held < 2_000
    assert op.rows_held <= op.config.levels * 4 * 4 + 2 * 8 + n // 40


def test_keys_whose_windows_closed_leave_the_state():
    """Keys come and go (each for 10 time units, ten live at a time), and some come back
    long after their windows closed: the keys held follow the live keys, not the keys ever
    seen, and the detections stay the reference's."""
    rng = np.random.default_rng(5)
    times = np.arange(3000)
    keys = times // 10 + rng.integers(0, 10, len(times))
    keys[::97] = rng.integers(0, 50, len(keys[::97]))  # old keys, back after a long while
    df = pd.DataFrame({"key": [f"k{k}" for k in keys], "time": times,
                       "call": rng.choice(list("abcd"), len(times)),
                       "fd": rng.choice(["1", "2"], len(times))})
    config = WideningConfig(base=4, max_length=3, levels=3)
    detector = EpisodeDetector(EPISODES[1])
    op = WindowWidening(detector, config=config)
    outputs, held = [], []
    for piece in split_frame(df, list(range(50, len(df), 50))):
        outputs.append(op.process(piece))
        op = WindowWidening.from_bytes(op.to_bytes())
        held.append(len(op._keys))
    outputs.append(op.finish())
    # live: ten keys, plus those whose rows the widest windows (2 * 4 * 2**2) still hold
    assert max(held) < 60 < df["key"].nunique() / 5
    got = canonical(pd.concat(outputs, ignore_index=True))
    assert len(got)
    pd.testing.assert_frame_equal(got, canonical(widening_reference(df, detector, config)))
