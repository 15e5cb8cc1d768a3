"""The report of ``multi_granular`` and ``recurring_items`` steps: one line per level.

``multi_granular``: the aggregate (the count, else the sum or the first other present) of the
key with the highest one in any window, over the whole run, one line per level (1 minute, 10
minutes, 1 hour, ...): a burst stands out at the finest level.
``recurring_items``: how many items recur at each report, summed over the keys, per level.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from windowkit.report import section as sec
from windowkit.report.collect import MAX_POINTS, shown_key, time_micros
from windowkit.report.figures import as_datetime, drawn, empty_note, subplots, to_png
from windowkit.report.format import duration_micros, format_duration
from windowkit.report.model import StepRun

#: The aggregate drawn, the first present in a result: a burst shows in the count and the
#: sum of a window, and averages out of its mean.
PREFERRED = ("count", "sum", "max", "mean", "min", "decayed_mean", "stddev", "variance")
#: Aggregates that are 0 over a window without rows.
ADDITIVE = ("count", "sum")


def multi_granular_section(step: StepRun) -> sec.Section:
    """Headline numbers and the figure of a ``multi_granular`` step.

    Examples
    --------
    >>> import datetime as dt
    >>> from windowkit.spark import multi_granular, split_rejected
    >>> t = [dt.datetime(2024, 1, 1) + dt.timedelta(seconds=s) for s in (1, 2, 30, 61)]
    >>> df = spark.createDataFrame([("a", x, 1.0) for x in t], "src string, t timestamp, v double")
    >>> params = {"time": "t", "window": "RANGES 2 MINUTES, 1 MINUTE SLIDES 1 MINUTE, 1 MINUTE",
    ...           "by": "src", "value": "v"}
    >>> reports, _ = split_rejected(multi_granular(df, **params))
    >>> out = multi_granular_section(StepRun("mg", "multi_granular", params, {"input": df},
    ...                              {"input": "flows"}, reports))
    >>> [(h.name, h.value) for h in out.headlines], out.figure.png[:4]
    ([('levels', 2), ('reports', 5), ('keys', 1)], b'\\x89PNG')
    """
    key = shown_key(step.arguments.get("by"))
    result = step.result
    columns = [] if result is None else result.columns
    measure = next((c for c in PREFERRED if c in columns),
                   next((c for c in columns if c.startswith("distinct")), None))
    by = result is not None and key.present(result)
    stats = level_stats(result, key.column(), peak=measure if by else None)
    headlines = level_headlines(stats)
    if not stats["reports"]:
        return sec.Section(headlines, note="no rows: no report")
    if measure is None:
        return sec.Section(headlines, note="no aggregate column to draw")
    busiest = stats["peak"] if by else None
    rows = result.filter(key.column() == F.lit(busiest)) if by else result
    lines = level_lines(rows, F.col(measure), reduce="max",
                        silent=0.0 if measure in ADDITIVE else None, levels=stats["per_level"])
    name = f"{key.label} = {busiest}" if by else "the stream"
    value = step.arguments.get("value")
    ylabel = f"{measure} of {value}" if isinstance(value, str) and measure != "count" else measure
    png = plot_levels(lines, ylabel, f"{ylabel}, {name}, per level",
                      span=(stats["first"], stats["last"]))
    return sec.Section(headlines, sec.Figure(
        png, alt=f"Line chart of the {measure} of {name} over time, one line per level",
        caption=f"The {measure} of {name}, the key of the highest {measure} of any window, at "
                "each report over the whole run, one line per level (range / slide)"
                + ("; 0 where the key has no report" if measure in ADDITIVE else "")))


def recurring_items_section(step: StepRun) -> sec.Section:
    """Headline numbers and the figure of a ``recurring_items`` step.

    Examples
    --------
    >>> import datetime as dt
    >>> from windowkit.spark import recurring_items, split_rejected
    >>> rows = [("h", dt.datetime(2024, 1, 1, 0, m, 0), p)
    ...         for m, p in [(0, "tcp"), (0, "udp"), (2, "tcp"), (3, "tcp")]]
    >>> df = spark.createDataFrame(rows, "host string, t timestamp, proto string")
    >>> params = {"time": "t", "item": "proto", "by": "host",
    ...           "window": "RANGES 4 MINUTES, 2 MINUTES SLIDES 2 MINUTES, 1 MINUTE"}
    >>> found, _ = split_rejected(recurring_items(df, **params))
    >>> out = recurring_items_section(StepRun("ri", "recurring_items", params, {"input": df},
    ...                               {"input": "flows"}, found))
    >>> [h.name for h in out.headlines], out.figure.png[:4]
    (['levels', 'reports', 'keys', 'items'], b'\\x89PNG')
    """
    result = step.result
    stats = level_stats(result, shown_key(step.arguments.get("by")).column(), items="item")
    headlines = level_headlines(stats, items=True)
    if not headlines[1].value:
        return sec.Section(headlines, note="no rows: no item recurred")
    per_report = result.groupBy("level", "range", "slide", "window_end").agg(
        F.count(F.lit(1)).alias("wk_items"))
    lines = level_lines(per_report, F.col("wk_items"), reduce="max", levels=stats["per_level"])
    png = plot_levels(lines, "recurring items", "recurring items per report, all keys")
    return sec.Section(headlines, sec.Figure(
        png, alt="Line chart of the number of recurring items at each report, one line per level",
        caption="How many (key, item) pairs recur at each report of each level"))


def level_stats(result: DataFrame | None, key: str | Column, items: str | None = None,
                peak: str | None = None) -> dict[str, Any]:
    """Levels, reports, keys, distinct ``items`` if named, the first and last report time
    (µs), each level's ``per_level`` row (``level``, ``range``, ``slide``, its first and last
    report ``lo``, ``hi``) and with ``peak`` the key of the report of highest ``peak`` (ties:
    the smallest key), from one Spark action over a multi-granular result.

    Examples
    --------
    >>> import datetime as dt
    >>> t = dt.datetime(1970, 1, 1)
    >>> df = spark.createDataFrame([("a", 0, 60, 1, t, 5), ("a", 1, 60, 1, t, 4),
    ...     ("b", 1, 60, 1, t, 9)], "k string, level long, range long, slide long, "
    ...     "window_end timestamp, count long")
    >>> stats = level_stats(df, "k", peak="count")
    >>> {k: v for k, v in stats.items() if k != "per_level"}
    {'levels': 2, 'reports': 3, 'keys': 2, 'items': 0, 'first': 0, 'last': 0, 'peak': 'b'}
    >>> [(r["level"], r["lo"], r["hi"]) for r in stats["per_level"]]
    [(0, 0, 0), (1, 0, 0)]
    """
    stats: dict[str, Any] = {"levels": 0, "reports": 0, "keys": 0, "items": 0, "first": None,
                             "last": None, "peak": None, "per_level": []}
    if result is None:
        return stats
    key = F.col(key) if isinstance(key, str) else key
    end = time_micros(result, "window_end")
    groups = [c for c in ("level", "range", "slide") if c in result.columns]
    exprs = [F.count(F.lit(1)).alias("n"), F.min(end).alias("lo"), F.max(end).alias("hi")]
    if peak is not None:
        # the smallest (-peak, key): the highest value, ties to the smallest key
        ranked = F.when(key.isNotNull() & F.col(peak).isNotNull(),
                        F.struct((-F.col(peak).cast("double")).alias("v"), key.alias("k")))
        exprs.append(F.min(ranked).alias("peak"))
    # one action: per level and key (and item), then per level beside the distinct counts,
    # both read from the same grouped rows (Spark reuses their shuffle: the result is read once)
    per_key = result.groupBy(*groups, key.alias("wk_key"), *([items] if items else [])).agg(
        *exprs)
    levels = per_key.groupBy(*groups).agg(
        F.sum("n").alias("n"), F.min("lo").alias("lo"), F.max("hi").alias("hi"),
        *([F.min("peak").alias("peak")] if peak is not None else []))
    distinct = per_key.agg(F.count_distinct("wk_key").alias("keys"), *(
        [F.count_distinct(items).alias("items")] if items else []))
    rows = (levels.withColumn("wk_part", F.lit(0))
            .unionByName(distinct.withColumn("wk_part", F.lit(1)), allowMissingColumns=True)
            .orderBy("wk_part", *groups).collect())
    counted = next(r for r in rows if r["wk_part"] == 1)
    rows = [r for r in rows if r["wk_part"] == 0]
    if not rows:
        return stats
    peaks = [r["peak"] for r in rows if peak is not None and r["peak"] is not None]
    los = [r["lo"] for r in rows if r["lo"] is not None]
    his = [r["hi"] for r in rows if r["hi"] is not None]
    stats.update(levels=sum(r["level"] is not None for r in rows) if "level" in groups else 0,
                 reports=sum(r["n"] for r in rows), keys=counted["keys"],
                 items=counted["items"] if items else 0,
                 first=min(los) if los else None, last=max(his) if his else None,
                 peak=min(peaks)["k"] if peaks else None, per_level=rows)
    return stats


def level_headlines(stats: dict[str, Any], items: bool = False) -> list[sec.Headline]:
    """The headline numbers of :func:`level_stats`.

    Examples
    --------
    >>> [(h.name, h.value) for h in level_headlines({"levels": 2, "reports": 3, "keys": 2})]
    [('levels', 2), ('reports', 3), ('keys', 2)]
    """
    out = [sec.count("levels", "levels", stats["levels"]),
           sec.count("reports", "reports", stats["reports"]),
           sec.count("keys", "keys", stats["keys"])]
    if items:
        out.append(sec.count("items", "distinct recurring items", stats["items"]))
    return out


def level_lines(rows: DataFrame, value: Column, *, reduce: str, silent: float | None = None,
                levels: list[Any] | None = None) -> dict[str, pd.DataFrame]:
    """Per level (labelled ``range / slide``), the ``(t, value)`` series at its reports'
    ``window_end``, each reduced in Spark to a bounded number of points (one action for all
    levels, and one more to find the levels unless ``levels`` gives them: rows with
    ``level``, ``range``, ``slide`` and the first and last report ``lo`` and ``hi``, µs, as
    :func:`level_stats` gives them); where reports skip a slide, the line breaks, or drops to
    ``silent`` (0 for a count: no row, no connection).

    Examples
    --------
    >>> import datetime as dt
    >>> t = dt.datetime(2024, 1, 1)
    >>> df = spark.createDataFrame([(0, 60_000_000, 1_000_000, t, 2.0)], "level long, "
    ...                            "range long, slide long, window_end timestamp, v double")
    >>> {k: v["value"].tolist() for k, v in level_lines(df, F.col("v"), reduce="avg").items()}
    {'1 min / 1 s': [2.0]}
    """
    points = rows.select("level", "range", "slide",
                         time_micros(rows, "window_end").alias("t"),
                         value.cast("double").alias("value")).filter(F.col("t").isNotNull())
    if levels is None:
        levels = points.groupBy("level", "range", "slide").agg(
            F.min("t").alias("lo"), F.max("t").alias("hi")).orderBy("level").collect()
    levels = [level for level in levels if level["lo"] is not None]
    if not levels:
        return {}
    # one job for every level: a level whose span holds more than MAX_POINTS slides (a key
    # reports at most once a slide) is reduced to one point per bucket of its own width, a
    # shorter one keeps each report (1 µs buckets)
    lo, width = F.lit(None).cast("long"), F.lit(None).cast("long")
    for level in levels:
        span = level["hi"] - level["lo"] + 1
        wide = (1 if span <= MAX_POINTS * duration_micros(level["slide"])
                else -(-span // MAX_POINTS))
        mine = F.col("level") == F.lit(level["level"])
        lo, width = (F.when(mine, F.lit(level["lo"])).otherwise(lo),
                     F.when(mine, F.lit(wide)).otherwise(width))
    agg = F.max("value") if reduce == "max" else F.avg("value")
    reduced = (points.withColumns({"wk_lo": lo, "wk_width": width})
               .groupBy("level", "wk_lo", "wk_width",
                        F.floor((F.col("t") - F.col("wk_lo")) / F.col("wk_width")).alias("b"))
               .agg(agg.alias("value"))
               .select("level", (F.col("wk_lo") + F.col("b") * F.col("wk_width")).cast("long")
                       .alias("t"), "value").toPandas())
    out = {}
    for level in levels:
        mine = reduced.loc[reduced["level"] == level["level"], ["t", "value"]]
        mine = mine.astype({"t": "int64", "value": "float64"}).sort_values("t", kind="stable")
        out[level_label(level["range"], level["slide"])] = break_gaps(
            mine.reset_index(drop=True), int(duration_micros(level["slide"])), silent)
    return out


def level_label(range_: int, slide: int) -> str:
    """A level as its legend names it: ``range / slide``.

    Examples
    --------
    >>> level_label(3_600_000_000, 600_000_000)
    '1 h / 10 min'
    """
    return f"{format_duration(range_)} / {format_duration(slide)}"


def break_gaps(points: pd.DataFrame, slide: int, silent: float | None = None) -> pd.DataFrame:
    """``points`` with a NaN value inserted where reports skip a slide or more (a key is
    silent there: no report), so that a line is not drawn across the silence; with
    ``silent``, that value from one slide after the last report to one before the next.

    Examples
    --------
    >>> p = pd.DataFrame({"t": [0, 10, 20, 60], "value": [1.0, 2.0, 3.0, 4.0]})
    >>> break_gaps(p, 10)["value"].tolist()
    [1.0, 2.0, 3.0, nan, 4.0]
    >>> break_gaps(p, 10, silent=0.0).to_numpy().tolist()[2:]
    [[20.0, 3.0], [30.0, 0.0], [50.0, 0.0], [60.0, 4.0]]
    """
    if len(points) < 2:
        return points
    t = points["t"].to_numpy()
    steps = np.diff(t)
    step = max(slide, int(steps[steps > 0].min()) if (steps > 0).any() else slide)
    after = np.flatnonzero(steps > 1.5 * step)
    if not len(after):
        return points
    if silent is None:
        holes = pd.DataFrame({"t": t[after] + 1, "value": np.nan})
    else:
        holes = pd.DataFrame({"t": np.concatenate([t[after] + step, t[after + 1] - step]),
                              "value": silent})
    out = pd.concat([points, holes], ignore_index=True)
    return out.sort_values("t", kind="stable").reset_index(drop=True)


@drawn
def plot_levels(lines: dict[str, pd.DataFrame], ylabel: str, title: str,
                span: tuple[int | None, int | None] = (None, None)) -> bytes:
    """One line per level over time, across ``span`` (µs) when given; PNG bytes.

    Examples
    --------
    >>> s = pd.DataFrame({"t": [0, 60_000_000], "value": [1.0, 3.0]})
    >>> plot_levels({"1 min / 1 s": s}, "mean", "mean per level")[:4]
    b'\\x89PNG'
    """
    fig, ax = subplots(height=3.6)
    draw_levels(ax, lines, ylabel, title)
    if None not in span and span[0] < span[1]:
        ax.set_xlim(as_datetime([span[0], span[1]]))
    return to_png(fig)


def draw_levels(ax, lines: dict[str, pd.DataFrame], ylabel: str, title: str) -> None:
    """Draw one line per level on ``ax``, axes labelled, the legend naming each level's range
    and slide (the report's figure and ``windowkit multigranular --plot`` alike).

    Examples
    --------
    >>> from windowkit.report.figures import subplots
    >>> fig, ax = subplots()
    >>> draw_levels(ax, {"1 min / 1 s": pd.DataFrame({"t": [0], "value": [1.0]})}, "n", "")
    >>> ax.get_xlabel(), ax.get_legend().get_texts()[0].get_text()
    ('report time (window end)', '1 min / 1 s')
    """
    if not lines:
        empty_note(ax, "no report")
    for label, points in lines.items():
        ax.plot(as_datetime(points["t"]), points["value"], lw=0.9, label=label,
                marker="." if len(points) < 60 else None)
    ax.set_xlabel("report time (window end)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if lines:
        ax.legend(loc="upper right", fontsize=8, title="range / slide", title_fontsize=8)
