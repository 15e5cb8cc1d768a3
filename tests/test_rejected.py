"""One convention for rejected rows: every function of windowkit.spark returns them with the
reason in ``rejected`` and the row as JSON in ``detail``, and ``split_rejected`` separates them
whatever the function; the old per-function splitters are deprecated aliases of it."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.spark

#: (key, time in seconds, value, item, system call); the last row has no time.
ROWS = [("a", t, float(t % 4), f"i{t % 3}", "execve" if t % 5 == 0 else "read")
        for t in range(1, 13)] + [("a", None, 9.0, "i0", "execve")]
BAD = {"k": "a", "x": 9.0, "item": "i0", "call": "execve"}
WINDOW = "RANGES 4 SECONDS, 2 SECONDS SLIDES 2 SECONDS, 1 SECOND"


def _framed(name: str):
    def run(df):
        import windowkit.spark as W
        from windowkit.core.frames import IncreasingTrend

        args = {"threshold_frames": ("x > 1",), "boundary_frames": ("x", 1.0),
                "delta_frames": ("x", 1.0), "aggregate_frames": ("x", "sum", ">", 1.0),
                "custom_frames": ("x", IncreasingTrend())}[name]
        return getattr(W, name)(df, "t", *args, by="k", time_unit="s", late=None)

    return run


def _filled(df):
    import windowkit.spark as W

    frames = W.threshold_frames(df.filter("t IS NOT NULL"), "t", "x > 1", by="k",
                                time_unit="s")
    return W.fill_frames(frames, df, "t", by="k", time_unit="s")


def _call(name: str, *args, **kwargs):
    def run(df):
        import windowkit.spark as W

        return getattr(W, name)(df, *args, **kwargs)

    return run


#: Every public function that can reject a row -> its call on the rows above.
REJECTING = {
    **{name: _framed(name) for name in ("threshold_frames", "boundary_frames", "delta_frames",
                                        "aggregate_frames", "custom_frames")},
    "fill_frames": _filled,
    "multi_granular": _call("multi_granular", "t", WINDOW, by="k", value="x", time_unit="s"),
    "recurring_items": _call("recurring_items", "t", "item", WINDOW, by="k", time_unit="s"),
    "widen_detect": _call("widen_detect", "t", by="k", detector="execve", base="1 second",
                          levels=1, time_unit="s"),
    "windowed_count_min": _call("windowed_count_min", "item", "t", window=6, time_unit="s",
                                shards=1),
    "persistent_items": _call("persistent_items", "item", "t", slot="1 second",
                              window_slots=4, alpha=0.5, epsilon=0.25, time_unit="s", shards=1),
    "exact_persistent_items": _call("exact_persistent_items", "item", "t", slot="1 second",
                                    window_slots=4, alpha=0.5, time_unit="s"),
}


@pytest.fixture(scope="module")
def rows(spark):
    return spark.createDataFrame(ROWS, "k string, t long, x double, item string, call string")


@pytest.mark.parametrize("function", sorted(REJECTING))
def test_split_rejected_separates_every_functions_rejected_rows(spark, rows, function):
    from windowkit.spark import split_rejected

    out = REJECTING[function](rows).localCheckpoint()
    types = {f.name: f.dataType.simpleString() for f in out.schema.fields}
    assert (types["rejected"], types["detail"]) == ("string", "string")
    kept, rejected = split_rejected(out)
    assert not {"rejected", "detail"} & set(kept.columns)
    assert rejected.columns == out.columns
    bad = rejected.select("rejected", "detail").collect()
    assert [r.rejected for r in bad] == ["malformed"]
    assert {k: v for k, v in json.loads(bad[0].detail).items() if k in BAD} == BAD
    assert kept.count() == out.count() - 1 > 0
    if "status" in out.columns:  # a frame's or an item's own status, never a reason
        assert rejected.first().status is None
        assert kept.filter("status IS NULL").count() == 0


def test_split_rejected_keeps_every_row_of_functions_that_reject_none(spark, rows):
    from windowkit.spark import (
        longest_frame,
        merge_count_min,
        split_rejected,
        threshold_frames,
        windowed_count_min,
    )

    frames = threshold_frames(rows, "t", "x > 1", by="k", time_unit="s", late=None)
    merged = merge_count_min(windowed_count_min(rows, "item", "t", window=6, time_unit="s"))
    for out in (longest_frame(frames, by="k"), merged):
        kept, rejected = split_rejected(out)
        own = [c for c in out.columns if c not in ("rejected", "detail")]
        assert kept.columns == own
        assert kept.count() == out.count() > 0
        assert rejected.count() == 0
        assert rejected.columns[-2:] == ["rejected", "detail"]


@pytest.mark.parametrize(("alias", "function"), [
    ("split_filled", "fill_frames"), ("split_reports", "multi_granular"),
    ("split_persistent", "persistent_items"), ("split_detections", "widen_detect")])
def test_old_splitters_warn_and_split_alike(spark, rows, alias, function):
    import windowkit.spark as W

    out = REJECTING[function](rows).localCheckpoint()
    with pytest.warns(DeprecationWarning, match=f"{alias} is deprecated.*split_rejected"):
        kept, rejected = getattr(W, alias)(out)
    new_kept, new_rejected = W.split_rejected(out)
    assert sorted(map(tuple, kept.collect())) == sorted(map(tuple, new_kept.collect()))
    assert rejected.collect() == new_rejected.collect()


def test_frames_module_splitter_is_a_deprecated_alias(spark, rows):
    from windowkit.spark import split_rejected
    from windowkit.spark.frames import split_rejected as old

    out = REJECTING["threshold_frames"](rows).localCheckpoint()
    with pytest.warns(DeprecationWarning, match="frames.split_rejected is deprecated"):
        kept, rejected = old(out)
    assert kept.count() == split_rejected(out)[0].count()
    assert rejected.select("rejected").collect() == split_rejected(out)[1].select(
        "rejected").collect()
