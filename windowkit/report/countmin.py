"""The report of a ``windowed_count_min`` step: heavy hitters against their true counts.

The step's result is the sites' sketch snapshots. The coordinator's view
(:func:`~windowkit.spark.merge_count_min`'s sketch, summed in the driver from the latest
snapshot of each shard) estimates every distinct item of the input in the JVM; the true
counts are an exact
``groupBy(item).count()`` over the input's last window, its steps found the way the step
found them (:func:`~windowkit.spark.countmin.count_min_sites`: positions for
``unit="samples"``, ``time // tick`` for ``unit="ticks"``; the window is the ``window`` steps
up to the last one, the step of the sketch's latest snapshot). Heavy hitters are
:func:`~windowkit.spark.heavy_hitters` on the latest view with ``phi`` (that of a
``heavy_hitters`` step reading this one, else :data:`DEFAULT_PHI`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from windowkit.core.durations import to_micros
from windowkit.report import section as sec
from windowkit.report.collect import time_micros
from windowkit.report.figures import BLUE, ORANGE, drawn, empty_note, subplots, to_png
from windowkit.report.model import RunSummary, StepRun

if TYPE_CHECKING:
    from windowkit.core.sketches import CountMin

DEFAULT_PHI = 0.01
#: Items drawn: the largest true counts in the window.
TOP = 20


def count_min_section(step: StepRun, phi: float | None = None,
                      summary: RunSummary | None = None) -> sec.Section:
    """Headline numbers and the figure of a ``windowed_count_min`` step.

    Heavy hitters are the items whose estimate in the coordinator's latest view reaches
    ``phi`` times its window count ``W`` (and is positive): what
    ``heavy_hitters(..., latest=True)`` reports, from the estimates computed here anyway.
    Without ``phi``, that of a ``heavy_hitters`` step of the run (``summary``) reading this
    step's snapshots, else :data:`DEFAULT_PHI`.

    Examples
    --------
    >>> from windowkit.spark import windowed_count_min
    >>> df = spark.createDataFrame([(i % 3 if i % 2 else 7, i) for i in range(40)],
    ...                            "item int, t long")
    >>> params = {"item": "item", "time": "t", "window": 10, "algorithm": "perfect"}
    >>> snaps = windowed_count_min(df, **params)
    >>> out = count_min_section(StepRun("cm", "windowed_count_min", params, {"input": df},
    ...                         {"input": "items"}, snaps.filter("rejected IS NULL")), phi=0.3)
    >>> {h.name: h.value for h in out.headlines}["heavy_hitters"], out.figure.png[:4]
    (1, b'\\x89PNG')
    """
    from windowkit.spark.countmin.merge import window_count as merged_window_count
    from windowkit.spark.countmin.queries import estimate_keys

    args = step.arguments
    df, item = step.inputs.get("input"), args.get("item")
    phi = downstream_phi(step, summary) if phi is None else phi
    phi = DEFAULT_PHI if phi is None else float(phi)
    if df is None or not isinstance(item, str):
        return sec.Section(error="the step has no `input` or no `item` column name")
    view = latest_view(step.result, args)
    if view is None:
        items = counted_once(df, args).filter(F.col("true_count") > 0).count()
        return sec.Section(_headlines(None, items, None, phi, None),
                           note="no rows: no sketch snapshot")
    sketch, last = view
    window_count = merged_window_count(sketch)
    threshold = phi * window_count
    estimated = estimate_keys(sketch, counted_once(df, args, last=last), "wk_key")
    hit = (F.col("estimate") >= F.lit(threshold)) & (F.col("estimate") > 0)
    # every distinct item stays in the JVM: its numbers and the drawn items come back
    totals = estimated.agg(
        F.count(F.when(F.col("true_count") > 0, True)).alias("items"),
        F.count(F.when(hit, True)).alias("hitters"),
        F.max(F.col("estimate") - F.col("true_count")).alias("over")).first()
    headlines = _headlines(window_count, totals["items"], totals["hitters"], phi,
                           None if totals["over"] is None else int(totals["over"]))
    shown = drawn_items(estimated, item)
    png = plot_counts(shown, item, threshold if window_count else None)
    return sec.Section(headlines, sec.Figure(
        png, alt=f"Bar chart of the {len(shown)} most frequent items' true and estimated "
                 "counts in the last window",
        caption=f"True counts in the last window (exact) against the sketch's estimates; "
                f"dashed line: the heavy-hitter threshold φ·W (φ = {phi:g})"))


def latest_view(snapshots: DataFrame | None, args: dict[str, Any]
                ) -> tuple[CountMin, int] | None:
    """The coordinator's latest view and its last step (:func:`_with_last_step`), or None
    without a snapshot.

    The sketch is :func:`~windowkit.spark.merge_count_min`'s, summed in the driver from the
    latest snapshot of every shard (in shard order, as the coordinator sums them): one JVM
    job, no Python worker.

    Examples
    --------
    >>> from windowkit.spark import merge_count_min, windowed_count_min
    >>> df = spark.createDataFrame([(i % 5, i) for i in range(60)], "item int, t long")
    >>> snaps = windowed_count_min(df, "item", "t", window=20, shards=3)
    >>> sketch, last = latest_view(snaps, {})
    >>> sketch.to_bytes() == bytes(merge_count_min(snaps).first()["sketch"]), last
    (True, 59)
    >>> latest_view(snaps.limit(0), {}) is None
    True
    """
    from windowkit.spark.countmin.merge import sum_sketches
    from windowkit.spark.countmin.snapshots import latest_snapshots

    if snapshots is None:
        return None
    rows = _with_last_step(latest_snapshots(snapshots), args).select(
        "shard", "sketch", "wk_last").collect()
    if not rows:
        return None
    rows = sorted(rows, key=lambda row: row["shard"])
    return sum_sketches([row["sketch"] for row in rows]), max(row["wk_last"] for row in rows)


def drawn_items(estimated: DataFrame, item: str) -> pd.DataFrame:
    """The items a Count-Min figure draws (``item``, ``true_count``, ``estimate``): the
    :data:`TOP` largest true counts (then estimates; ties to the smallest item), chosen in
    Spark.

    Examples
    --------
    >>> est = spark.createDataFrame([(i, 30 - i // 2, 40 - i) for i in range(30)],
    ...                             "ip int, true_count long, estimate long")
    >>> shown = drawn_items(est, "ip")
    >>> len(shown), shown["ip"].tolist()[:3]
    (20, [0, 1, 2])
    """
    return estimated.orderBy(F.desc("true_count"), F.desc("estimate"), F.asc(item)).limit(
        TOP).select(item, "true_count", "estimate").toPandas()


def heavy_hitters_section(step: StepRun, upstream: StepRun | None = None,
                          summary: RunSummary | None = None) -> sec.Section:
    """Headline numbers and the figure of a ``heavy_hitters`` step: the items of its latest
    view, their estimates against their true counts in the sketch's last window (from the
    ``windowed_count_min`` step it reads, ``upstream``, else the run's step its ``input``
    names in ``summary``) and the threshold φ·W.

    Examples
    --------
    >>> from windowkit.spark import heavy_hitters, windowed_count_min
    >>> df = spark.createDataFrame([(i % 3 if i % 2 else 7, i) for i in range(40)],
    ...                            "item int, t long")
    >>> params = {"item": "item", "time": "t", "window": 10, "algorithm": "perfect"}
    >>> snaps = windowed_count_min(df, **params).filter("rejected IS NULL")
    >>> sketch = StepRun("cm", "windowed_count_min", params, {"input": df}, {}, snaps)
    >>> hh = heavy_hitters(snaps, df, 0.3, "item", latest=True)
    >>> out = heavy_hitters_section(StepRun("hh", "heavy_hitters", {"phi": 0.3, "item": "item"},
    ...     {"input": snaps}, {"input": "cm"}, hh), upstream=sketch)
    >>> {h.name: h.value for h in out.headlines}["heavy_hitters"], out.figure.png[:4]
    (1, b'\\x89PNG')
    """
    item = step.arguments.get("item", "item")
    result = step.result
    if result is None or item not in result.columns:
        return sec.Section(error=f"the step's rows have no `{item}` column")
    if upstream is None and summary is not None:
        upstream = next((s for s in summary.steps
                         if s.name == step.input_names.get("input")), None)
    # one action: the latest view's rows (a scalar subquery finds it), each with its step
    latest = result.filter(F.col("view") == result.select(F.max("view")).scalar())
    if upstream is not None:
        latest = _with_last_step(latest, upstream.arguments)
    shown = latest.toPandas()
    if not len(shown):
        return sec.Section(_hitter_headlines(0, None, None, None), note="no rows: no item "
                           "reached the threshold")
    last = shown.pop("wk_last").iloc[0] if "wk_last" in shown else None
    if upstream is not None and upstream.inputs.get("input") is not None:
        counts = counted_once(upstream.inputs["input"], upstream.arguments,
                              last=None if pd.isna(last) else int(last))
        # an item with no row in the last window has no true count there (as a join with
        # the window's counts leaves it)
        window = counts.filter((F.col("true_count") > 0) & F.col(item).isin(
            shown[item].dropna().unique().tolist())).select(item, "true_count").toPandas()
        shown = shown.merge(window, on=item, how="left")
    else:
        shown["true_count"] = np.nan
    shown = shown.sort_values("estimate", ascending=False)
    threshold = float(shown["threshold"].iloc[0])
    known = shown["true_count"].notna().all()
    shown["true_count"] = shown["true_count"].fillna(0)
    below = int((shown["true_count"] < threshold).sum()) if known else None
    headlines = _hitter_headlines(shown[item].nunique(), float(shown["window_count"].iloc[0]),
                                  threshold, below)
    top = shown.head(TOP)
    png = plot_counts(top, item, threshold,
                      title=f"the {len(top)} heavy hitters of the latest view")
    return sec.Section(headlines, sec.Figure(
        png, alt=f"Bar chart of the {len(top)} heavy hitters' estimated and true counts",
        caption="Each reported item's estimate against its true count in the sketch's last "
                "window (exact); dashed line: the threshold φ·W"))


def downstream_phi(step: StepRun, summary: RunSummary | None) -> float | None:
    """``phi`` of a ``heavy_hitters`` step reading ``step``'s snapshots, if there is one.

    Examples
    --------
    >>> cm = StepRun("cm", "windowed_count_min", {}, {}, {}, None)
    >>> hh = StepRun("hh", "heavy_hitters", {"phi": 0.05}, {}, {"input": "cm"}, None)
    >>> downstream_phi(cm, RunSummary("t", "p", "local", "batch", steps=[cm, hh]))
    0.05
    """
    for other in [] if summary is None else summary.steps:
        if (other.function == "heavy_hitters" and other.input_names.get("input") == step.name
                and "phi" in other.params):
            return float(other.params["phi"])
    return None


def _hitter_headlines(hitters: int, window_count: float | None, threshold: float | None,
                      below: int | None) -> list[sec.Headline]:
    return [
        sec.count("heavy_hitters", "heavy hitters", hitters),
        sec.count("window_count", "window count W", window_count),
        sec.count("threshold", "threshold φ·W", threshold),
        sec.count("below_threshold", "reported, true count below φ·W", below),
    ]


#: Every distinct item of the latest inputs asked for, with its key and its exact count in the
#: last window, computed once and kept by Spark: a Count-Min step's section and its heavy
#: hitters' section both read it in small jobs. Each entry keeps its input, so the input's
#: ``id`` cannot be reused while the entry lives.
_COUNTED: dict[tuple[int, str, int | None], tuple[DataFrame, DataFrame]] = {}
_COUNTING = threading.Lock()


def counted_once(df: DataFrame, args: dict[str, Any], last: int | None = None) -> DataFrame:
    """:func:`item_counts`, computed once per input, parameters and ``last`` step (one Spark
    job) and kept as a local checkpoint: later queries read its rows, not the input.

    Examples
    --------
    >>> df = spark.createDataFrame([(i % 2, i) for i in range(10)], "item int, t long")
    >>> args = {"item": "item", "time": "t", "window": 3}
    >>> counted_once(df, args) is counted_once(df, dict(args))
    True
    """
    key = (id(df), repr(sorted((k, repr(v)) for k, v in args.items())), last)
    # the sections of a sketch and of its heavy hitters, built at once, count it once
    with _COUNTING:
        if key not in _COUNTED:
            if len(_COUNTED) >= 4:
                _COUNTED.pop(next(iter(_COUNTED)))
            _COUNTED[key] = (df, item_counts(df, args, last).localCheckpoint())
        return _COUNTED[key][1]


def item_counts(df: DataFrame, args: dict[str, Any], last: int | None = None) -> DataFrame:
    """Every distinct non-null item of the input: ``item``, ``wk_key`` (the key the sketch
    hashes) and ``true_count``, its exact count in the last window (0 outside it), one Spark
    aggregate; one more job finds the input's last step unless ``last`` gives it (the step of
    the sketch's latest snapshot, :func:`_with_last_step`).

    Examples
    --------
    >>> df = spark.createDataFrame([(i % 3, i) for i in range(10)], "item int, t long")
    >>> out = item_counts(df, {"item": "item", "time": "t", "window": 3}).toPandas()
    >>> sorted(zip(out["item"], out["true_count"]))
    [(0, 1), (1, 1), (2, 1)]
    >>> found = item_counts(df, {"item": "item", "time": "t", "window": 3}, last=9).toPandas()
    >>> found.sort_values("item").reset_index(drop=True).equals(
    ...     out.sort_values("item").reset_index(drop=True))
    True
    """
    rows, last = _steps(df, args, last)
    recent = F.lit(False) if last is None else F.col("wk_step") > F.lit(last - int(args["window"]))
    return rows.groupBy(args["item"]).agg(
        F.first("wk_key").alias("wk_key"),
        F.count(F.when(recent, True)).alias("true_count"))


def last_window_counts(df: DataFrame, args: dict[str, Any]) -> DataFrame:
    """``item, true_count``: exact counts of the input's last window, as the step defines it.

    The step's sites give each row its step (:func:`~windowkit.spark.countmin.count_min_sites`:
    positions for ``unit="samples"``, ``time // tick`` for ``unit="ticks"``); the window is
    the ``window`` steps up to the last one.

    Examples
    --------
    >>> df = spark.createDataFrame([(i % 2, i) for i in range(10)], "item int, t long")
    >>> sorted(tuple(r) for r in last_window_counts(df, {"item": "item", "time": "t",
    ...                                                  "window": 3}).collect())
    [(0, 1), (1, 2)]
    """
    item = args["item"]
    rows, last = _steps(df, args)
    rows = rows.filter(F.col("wk_step").isNotNull())
    if last is None:
        return rows.limit(0).groupBy(item).agg(F.count(F.lit(1)).alias("true_count"))
    recent = rows.filter(F.col("wk_step") > F.lit(last - int(args["window"])))
    return recent.groupBy(item).agg(F.count(F.lit(1)).alias("true_count"))


def _steps(df: DataFrame, args: dict[str, Any], last: int | None = None
           ) -> tuple[DataFrame, int | None]:
    """The input's non-null items with their key (``wk_key``) and step (``wk_step``, null for
    a row the step set aside), and the last step (``last`` if given, else found in one job;
    None without one)."""
    from windowkit.spark.countmin import ITEM_KEY, POSITION, POSITION_MICROS, count_min_sites

    item, unit = args["item"], args.get("unit", "samples")
    sites = count_min_sites(df, item, args.get("time"), args.get("by"), args.get("shards"),
                            unit=unit, time_unit=args.get("time_unit"))
    per_step = POSITION_MICROS if unit == "samples" else to_micros(args.get("tick"), "tick")
    rows = sites.filter(F.col(item).isNotNull()).select(
        item, F.col(ITEM_KEY).alias("wk_key"),
        F.floor(F.col(POSITION) / F.lit(per_step)).alias("wk_step"))
    return rows, rows.agg(F.max("wk_step")).first()[0] if last is None else last


def _with_last_step(snapshots: DataFrame, args: dict[str, Any]) -> DataFrame:
    """``snapshots`` (or a merged view, or heavy hitters' rows: a ``time`` column as the
    sketch gives it) with ``wk_last``, the step of their ``time`` as :func:`_steps` numbers
    the input's rows: a snapshot's time is the window's last step, so the input need not be
    read for it.

    Examples
    --------
    >>> df = spark.createDataFrame([(7, 185)], "shard int, time long")
    >>> _with_last_step(df, {"unit": "ticks", "tick": "1 minute", "time_unit": "s"}).first()[
    ...     "wk_last"], _with_last_step(df, {}).first()["wk_last"]
    (3, 185)
    """
    if args.get("unit", "samples") == "samples":  # the time is the position, the step itself
        return snapshots.withColumn("wk_last", F.col("time").cast("long"))
    micros = time_micros(snapshots, "time", args.get("time_unit"))
    tick = to_micros(args.get("tick"), "tick")
    return snapshots.withColumn("wk_last", F.floor(micros / F.lit(tick)).cast("long"))


@drawn
def plot_counts(items: pd.DataFrame, item: str, threshold: float | None,
                title: str | None = None) -> bytes:
    """Paired bars per item: true count in the window and the sketch's estimate; PNG bytes.

    Examples
    --------
    >>> t = pd.DataFrame({"ip": ["a", "b"], "true_count": [9, 4], "estimate": [9, 6]})
    >>> plot_counts(t, "ip", 5.0)[:4]
    b'\\x89PNG'
    """
    fig, ax = subplots(height=3.6, bottom=1.2)  # the items' names, turned 45°
    if not len(items):
        empty_note(ax, "no item in the window")
        return to_png(fig)
    x = np.arange(len(items))
    ax.bar(x - 0.2, items["true_count"], width=0.4, color=BLUE, label="true count")
    ax.bar(x + 0.2, items["estimate"], width=0.4, color=ORANGE, label="estimate")
    if threshold is not None:
        ax.axhline(threshold, color="black", lw=0.8, ls="--", label="heavy-hitter threshold")
    ax.set_xticks(x, [str(v) for v in items[item]], rotation=45, ha="right", fontsize=7)
    ax.set_xlabel(item)
    ax.set_ylabel("rows in the last window")
    ax.set_title(title or f"the {len(items)} most frequent items of the last window")
    ax.legend(loc="upper right", fontsize=8)
    return to_png(fig)


def _headlines(window_count: float | None, items: int, hitters: int | None, phi: float,
               over: float | None) -> list[sec.Headline]:
    return [
        sec.count("window_count", "window count W (sketch)", window_count),
        sec.count("items", "distinct items in the window", items),
        sec.count("heavy_hitters", f"heavy hitters (φ = {phi:g})", hitters),
        sec.count("max_overestimate", "max overestimate", over),
    ]
