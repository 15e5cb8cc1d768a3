"""The compiled paths of PWW against the general ones they must agree with.

The level kernel gives the built-in episode detector only its relevant rows (relevance column)
and only the windows holding a row for every step (required bits), in one compiled call; a
custom detector gets every row of every window, one Python call per window. The episode
encoder hashes the categories of a categorical column once per stream. Each fast path must give
exactly what the general one gives.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkit.core.widening import Detector, EpisodeDetector, WideningConfig, WindowWidening
from windowkit.core.widening.kernel import merge_by_slot, order_by_slot
from windowkit.testing.streams import split_frame, split_points

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

EPISODES = ["a\nb", "a fd=$x\n{ b fd=$x ; c }", "{ a ; b }", "a\nb\nc", "c fd=1"]

configs = st.builds(
    WideningConfig,
    base=st.sampled_from([4, 10]),
    max_length=st.integers(1, 3),
    levels=st.integers(1, 5),
    report=st.sampled_from(["first", "all"]),
    base_chunks=st.booleans(),
)


class PlainEpisode(Detector):
    """The episode matcher through the general path: no relevance column, no required bits,
    one Python call per window with all its rows."""

    def __init__(self, episode: str) -> None:
        self.inner = EpisodeDetector(episode)

    @property
    def columns(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.inner.columns

    @property
    def width(self) -> int:
        return self.inner.width

    def encode(self, rows: pd.DataFrame) -> np.ndarray:
        return self.inner.encode(rows)

    def detect(self, window: np.ndarray) -> list:
        return self.inner.detect(window)


@st.composite
def streams(draw: st.DrawFn, max_keys: int = 4, max_rows: int = 30) -> pd.DataFrame:
    """Rows ``key, time, call, fd`` sorted by time; gaps 0..9 (ties included) per key."""
    rows = []
    for k in range(draw(st.integers(1, max_keys))):
        t = draw(st.integers(-20, 20))
        for _ in range(draw(st.integers(0, max_rows))):
            t += draw(st.integers(0, 9))
            rows.append((f"k{k}", t, draw(st.sampled_from("abcde")),
                         draw(st.sampled_from([None, "1", "2"]))))
    df = pd.DataFrame(rows, columns=["key", "time", "call", "fd"]).astype({"time": "int64"})
    return df.sort_values("time", kind="stable").reset_index(drop=True)


def _run(detector: Detector, config: WideningConfig, df: pd.DataFrame,
         cuts: list[int]) -> tuple[pd.DataFrame, dict]:
    op = WindowWidening(detector, config=config)
    held = []
    outputs = []
    for piece in split_frame(df, cuts):
        outputs.append(op.process(piece))
        held.append(op.rows_held)
    outputs.append(op.finish())
    out = pd.concat(outputs, ignore_index=True).astype({"key": object})
    counters = {"records_given": op.records_given.tolist(), "windows_run": op.windows_run.tolist(),
                "windows_skipped": op.windows_skipped, "max_window_rows": op.max_window_rows,
                "peak_rows_held": op.peak_rows_held, "rows_held": held}
    return out, counters


@SETTINGS
@given(df=streams(), config=configs, episode=st.sampled_from(EPISODES), data=st.data())
def test_built_in_detector_path_equals_the_general_path(df, config, episode, data):
    cuts = data.draw(split_points(len(df)))
    fast, fast_counts = _run(EpisodeDetector(episode), config, df, cuts)
    plain, plain_counts = _run(PlainEpisode(episode), config, df, cuts)
    # same detections in the same order, and the same work and memory counters: which rows
    # and windows reach the detector changes nothing else
    pd.testing.assert_frame_equal(fast, plain)
    assert fast_counts == plain_counts


values = st.sampled_from([None, "1", "2", "x", "dup", "execve", 3, 2.0])


@SETTINGS
@given(column=st.lists(values, min_size=1, max_size=40), data=st.data())
def test_categorical_columns_encode_as_their_values(column, data):
    # chunks of one stream share its categories (hashed once); a chunk with other categories
    # must not reuse them
    # (the episode also reads ``exe``, which the rows lack: null throughout)
    detector = EpisodeDetector("dup fd=1 => $r\nexecve fd=x exe=$e\n{ x ; dup }")
    text = pd.Series([None if v is None else str(v) for v in column], dtype=object)
    frame = pd.DataFrame({"call": text, "fd": pd.Series(column, dtype=object), "ret": text})
    expected = detector.encode(frame)
    categorical = frame.astype("category")
    cuts = data.draw(split_points(len(frame)))
    got = np.concatenate([detector.encode(part) for part in split_frame(categorical, cuts)])
    np.testing.assert_array_equal(got, expected)
    for name in frame:  # the same values with their categories in another order
        reordered = categorical.copy()
        column = categorical[name].cat
        reordered[name] = column.reorder_categories(column.categories[::-1])
        np.testing.assert_array_equal(detector.encode(reordered), expected)


@SETTINGS
@given(df=streams(), config=configs, data=st.data())
def test_categorical_input_gives_what_object_input_gives(df, config, data):
    cuts = data.draw(split_points(len(df)))
    detector = EpisodeDetector("a fd=$x\n{ b fd=$x ; c }")
    as_object, _ = _run(detector, config, df, cuts)
    as_category, _ = _run(EpisodeDetector(detector.text), config, df.astype(
        {"key": "category", "call": "category", "fd": "category"}), cuts)
    # keys are numbered in another order (categories sorted), which orders the output rows
    cols = ["key", "detected_at", "level", "window_start", "times", "ordinals"]
    pd.testing.assert_frame_equal(
        as_category.sort_values(cols, kind="stable").reset_index(drop=True),
        as_object.sort_values(cols, kind="stable").reset_index(drop=True))


@SETTINGS
@given(slot=st.lists(st.integers(0, 5), max_size=40), split=st.integers(0, 40))
def test_key_order_helpers_equal_stable_sorts(slot, split):
    slot = np.asarray(slot, dtype=np.int64)
    np.testing.assert_array_equal(order_by_slot(slot, 6), np.argsort(slot, kind="stable"))
    # two reference lists, each sorted by slot: merged, old ones first within a slot
    idx = np.arange(len(slot))
    old = idx[:split][np.argsort(slot[:split], kind="stable")]
    new = idx[split:][np.argsort(slot[split:], kind="stable")]
    both = np.concatenate([old, new])
    expected = both[np.argsort(slot[both], kind="stable")]
    np.testing.assert_array_equal(merge_by_slot(slot, old, new), expected)
