"""The report of ``multi_granular`` and ``recurring_items`` steps: one line per level.

``multi_granular``: the busiest key's aggregate (its mean, else sum, count or the first other
aggregate present) over time, one line per level (1 minute, 10 minutes, 1 hour, ...).
``recurring_items``: how many items recur at each report, summed over the keys, per level.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from windowkit.report import section as sec
from windowkit.report.collect import series, time_micros, top_key
from windowkit.report.figures import as_datetime, empty_note, subplots, to_png
from windowkit.report.format import format_duration
from windowkit.report.model import StepRun

#: The aggregate drawn, the first present in a result.
PREFERRED = ("mean", "sum", "count", "max", "min", "decayed_mean", "stddev", "variance")


def multi_granular_section(step: StepRun) -> sec.Section:
    """Headline numbers and the figure of a ``multi_granular`` step.

    Examples
    --------
    >>> import datetime as dt
    >>> from windowkit.spark import multi_granular, split_reports
    >>> t = [dt.datetime(2024, 1, 1) + dt.timedelta(seconds=s) for s in (1, 2, 30, 61)]
    >>> df = spark.createDataFrame([("a", x, 1.0) for x in t], "src string, t timestamp, v double")
    >>> params = {"time": "t", "window": "RANGES 2 MINUTES, 1 MINUTE SLIDES 1 MINUTE, 1 MINUTE",
    ...           "by": "src", "value": "v"}
    >>> reports, _ = split_reports(multi_granular(df, **params))
    >>> out = multi_granular_section(StepRun("mg", "multi_granular", params, {"input": df},
    ...                              {"input": "flows"}, reports))
    >>> [(h.name, h.value) for h in out.headlines], out.figure.png[:4]
    ([('levels', 2), ('reports', 5), ('keys', 1)], b'\\x89PNG')
    """
    key = step.arguments.get("by") or "key"
    result = step.result
    headlines = level_headlines(result, key)
    if not headlines[1].value:
        return sec.Section(headlines, note="no rows: no report")
    measure = next((c for c in PREFERRED if c in result.columns),
                   next((c for c in result.columns if c.startswith("distinct")), None))
    if measure is None:
        return sec.Section(headlines, note="no aggregate column to draw")
    weight = F.col("count") if "count" in result.columns else None
    busiest = top_key(result, key, weight)
    rows = result.filter(F.col(key) == F.lit(busiest)) if step.arguments.get("by") else result
    lines = level_lines(rows, F.col(measure), reduce="avg")
    name = f"{key} = {busiest}" if step.arguments.get("by") else "the stream"
    value = step.arguments.get("value")
    ylabel = f"{measure} of {value}" if isinstance(value, str) and measure != "count" else measure
    png = plot_levels(lines, ylabel, f"{ylabel}, {name}, per level")
    return sec.Section(headlines, sec.Figure(
        png, alt=f"Line chart of the {measure} of {name} over time, one line per level",
        caption=f"The {measure} of {name} (the busiest key) at each report, one line per level "
                "(range / slide)"))


def recurring_items_section(step: StepRun) -> sec.Section:
    """Headline numbers and the figure of a ``recurring_items`` step.

    Examples
    --------
    >>> import datetime as dt
    >>> from windowkit.spark import recurring_items, split_reports
    >>> rows = [("h", dt.datetime(2024, 1, 1, 0, m, 0), p)
    ...         for m, p in [(0, "tcp"), (0, "udp"), (2, "tcp"), (3, "tcp")]]
    >>> df = spark.createDataFrame(rows, "host string, t timestamp, proto string")
    >>> params = {"time": "t", "item": "proto", "by": "host",
    ...           "window": "RANGES 4 MINUTES, 2 MINUTES SLIDES 2 MINUTES, 1 MINUTE"}
    >>> found, _ = split_reports(recurring_items(df, **params))
    >>> out = recurring_items_section(StepRun("ri", "recurring_items", params, {"input": df},
    ...                               {"input": "flows"}, found))
    >>> [h.name for h in out.headlines], out.figure.png[:4]
    (['levels', 'reports', 'keys', 'items'], b'\\x89PNG')
    """
    key = step.arguments.get("by") or "key"
    result = step.result
    headlines = level_headlines(result, key, items="item")
    if not headlines[1].value:
        return sec.Section(headlines, note="no rows: no item recurred")
    per_report = result.groupBy("level", "range", "slide", "window_end").agg(
        F.count(F.lit(1)).alias("wk_items"))
    lines = level_lines(per_report, F.col("wk_items"), reduce="max")
    png = plot_levels(lines, "recurring items", "recurring items per report, all keys")
    return sec.Section(headlines, sec.Figure(
        png, alt="Line chart of the number of recurring items at each report, one line per level",
        caption="How many (key, item) pairs recur at each report of each level"))


def level_headlines(result: DataFrame | None, key: str, items: str | None = None
                    ) -> list[sec.Headline]:
    """Levels, reports and keys of a multi-granular result, and distinct ``items`` if named
    (one Spark aggregation).

    Examples
    --------
    >>> df = spark.createDataFrame([("a", 0), ("a", 1), ("b", 1)], "k string, level long")
    >>> [(h.name, h.value) for h in level_headlines(df, "k")]
    [('levels', 2), ('reports', 3), ('keys', 2)]
    """
    stats = {"levels": 0, "reports": 0, "keys": 0, "items": 0}
    if result is not None:
        extra = [F.count_distinct(items).alias("items")] if items else []
        stats.update(result.agg(F.count_distinct("level").alias("levels"),
                                F.count(F.lit(1)).alias("reports"),
                                F.count_distinct(key).alias("keys"), *extra).first().asDict())
    out = [sec.count("levels", "levels", stats["levels"]),
           sec.count("reports", "reports", stats["reports"]),
           sec.count("keys", "keys", stats["keys"])]
    if items:
        out.append(sec.count("items", "distinct recurring items", stats["items"]))
    return out


def level_lines(rows: DataFrame, value: Column, *, reduce: str) -> dict[str, pd.DataFrame]:
    """Per level (labelled ``range / slide``), the ``(t, value)`` series at its reports'
    ``window_end``, each reduced in Spark to a bounded number of points.

    Examples
    --------
    >>> import datetime as dt
    >>> t = dt.datetime(2024, 1, 1)
    >>> df = spark.createDataFrame([(0, 60_000_000, 1_000_000, t, 2.0)], "level long, "
    ...                            "range long, slide long, window_end timestamp, v double")
    >>> {k: v["value"].tolist() for k, v in level_lines(df, F.col("v"), reduce="avg").items()}
    {'1 min / 1 s': [2.0]}
    """
    levels = rows.select("level", "range", "slide").distinct().orderBy("level").collect()
    out = {}
    for level in levels:
        mine = rows.filter(F.col("level") == F.lit(level["level"]))
        label = f"{format_duration(level['range'])} / {format_duration(level['slide'])}"
        points = series(mine, time_micros(mine, "window_end"), value, reduce=reduce)
        out[label] = break_gaps(points, int(level["slide"]))
    return out


def break_gaps(points: pd.DataFrame, slide: int) -> pd.DataFrame:
    """``points`` with a NaN value inserted where reports skip a slide or more (a key is
    silent there: no report), so that a line is not drawn across the silence.

    Examples
    --------
    >>> p = pd.DataFrame({"t": [0, 10, 20, 60], "value": [1.0, 2.0, 3.0, 4.0]})
    >>> break_gaps(p, 10)["value"].tolist()
    [1.0, 2.0, 3.0, nan, 4.0]
    """
    if len(points) < 2:
        return points
    t = points["t"].to_numpy()
    steps = np.diff(t)
    gap = 1.5 * max(slide, int(steps[steps > 0].min()) if (steps > 0).any() else slide)
    after = np.flatnonzero(steps > gap)
    if not len(after):
        return points
    holes = pd.DataFrame({"t": t[after] + 1, "value": np.nan})
    out = pd.concat([points, holes], ignore_index=True)
    return out.sort_values("t", kind="stable").reset_index(drop=True)


def plot_levels(lines: dict[str, pd.DataFrame], ylabel: str, title: str) -> bytes:
    """One line per level over time; PNG bytes.

    Examples
    --------
    >>> s = pd.DataFrame({"t": [0, 60_000_000], "value": [1.0, 3.0]})
    >>> plot_levels({"1 min / 1 s": s}, "mean", "mean per level")[:4]
    b'\\x89PNG'
    """
    fig, ax = subplots(height=3.6)
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
    return to_png(fig)
