"""The report of a frames step: frames shaded on the series of the key with the most frames.

Covers ``threshold_frames``, ``boundary_frames``, ``delta_frames``, ``aggregate_frames`` and
``custom_frames``: they share one output (``key``, ``frame_id``, ``start``, ``end``, ``last``,
``status``, ...). The series drawn is the step's ``value`` parameter, or for threshold frames
the first numeric input column the ``when`` predicate names (with its threshold as a line when
the predicate is a plain comparison such as ``loss_rate > 0.003``), or else the predicate
itself as 0/1.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.report import section as sec
from windowkit.report.collect import ShownKey, series, shown_key, time_micros, top_key
from windowkit.report.figures import as_datetime, png_of
from windowkit.report.model import StepRun

#: The most frames of one key drawn.
MAX_FRAMES = 2000
_COMPARISON = re.compile(r"^\s*`?([A-Za-z_][\w]*)`?\s*(>=|>|<=|<)\s*([-+]?[\d.]+(?:[eE][-+]?\d+)?)"
                         r"\s*$")


def frames_section(step: StepRun) -> sec.Section:
    """Headline numbers and the figure of a frames step.

    Examples
    --------
    >>> from windowkit.spark import threshold_frames, split_rejected
    >>> df = spark.createDataFrame([("s1", t, x) for t, x in enumerate([30, 33, 34, 30], 1)],
    ...                            "sensor string, t long, temp int")
    >>> params = {"time": "t", "when": "temp > 32", "by": "sensor", "time_unit": "s"}
    >>> frames, _ = split_rejected(threshold_frames(df, **params))
    >>> out = frames_section(StepRun("hot", "threshold_frames", params, {"input": df},
    ...                              {"input": "temps"}, frames, rows_out=1))
    >>> [(h.name, h.value) for h in out.headlines][:3], out.figure.png[:4]
    ([('frames', 1), ('keys', 1), ('total', 2000000)], b'\\x89PNG')
    """
    params = step.arguments
    key = shown_key(params.get("by"))
    unit = params.get("time_unit")
    frames = frame_rows(step.result, key.column(), unit)
    stats = frame_stats(frames)
    headlines = frame_headlines(stats)
    if not stats["rows"]:
        return sec.Section(headlines, note="no rows: no frame found")
    shown = frames[frames["status"] == "final"] if stats["n"] else frames
    busiest = top_key(shown["key"])
    mine = shown[shown["key"] == busiest] if busiest is not None else shown
    mine = mine.sort_values("start", kind="stable").head(MAX_FRAMES)
    frames = pd.DataFrame({"start": as_datetime(mine["start"]), "end": as_datetime(mine["end"]),
                           "status": mine["status"].astype(str).to_numpy()})
    readings, label, threshold = _readings(step, key, busiest)
    name = f"{key.label} = {busiest}" if key.keyed else "the stream"
    title = f"{name}: {int((frames['status'] == 'final').sum())} final frames"
    png = png_of(lambda path: _plot(readings, frames, path, label, threshold, title))
    what = f"{label} of {name}" if len(readings) else f"the frames of {name}"
    figure = sec.Figure(
        png,
        alt=f"Time series of {what}, with its final frames shaded",
        caption=f"{what} (the key with the most frames), final frames shaded"
        + (f"; dashed line: the threshold {threshold:g}" if threshold is not None else ""),
    )
    return sec.Section(headlines, figure)


def frame_rows(result: DataFrame | None, key: str | Column, time_unit: str | None = None
               ) -> pd.DataFrame:
    """A frames result as ``key``, ``start``, ``end`` (µs; an open fragment ends after its
    ``last`` row), ``length`` (``end - start``, µs, final frames only) and ``status``, read in
    one Spark job: a frame summarizes many rows, and every number of the section is drawn from
    these few columns.

    Examples
    --------
    >>> df = spark.createDataFrame([("a", 10, 20, 19, "final"), ("a", 30, None, 31, "partial")],
    ...                            "k string, start long, end long, last long, status string")
    >>> frame_rows(df, "k", "s")[["start", "end", "length"]].to_numpy().tolist()
    [[10000000.0, 20000000.0, 10000000.0], [30000000.0, 31000001.0, nan]]
    """
    columns = ["key", "start", "end", "length", "status"]
    if result is None:
        return pd.DataFrame({c: [] for c in columns})
    start, end = time_micros(result, "start", time_unit), time_micros(result, "end", time_unit)
    closed = end
    if "last" in result.columns:
        closed = F.coalesce(end, time_micros(result, "last", time_unit) + 1)
    final = F.col("status") == "final"
    key = F.col(key) if isinstance(key, str) else key
    return result.select(key.alias("key"), start.alias("start"), closed.alias("end"),
                         F.when(final, end - start).alias("length"),
                         F.col("status").cast("string").alias("status")).toPandas()


def frame_stats(frames: pd.DataFrame) -> dict[str, Any]:
    """Rows, final frames (``n``), keys with final frames, total, median and longest final
    frame duration (µs) of :func:`frame_rows`.

    Examples
    --------
    >>> rows = pd.DataFrame({"key": ["a", "a", "a"], "length": [10e6, 30e6, None],
    ...                      "status": ["final", "final", "partial"]})
    >>> frame_stats(rows)  # doctest: +NORMALIZE_WHITESPACE
    {'rows': 3, 'n': 2, 'keys': 1, 'total': 40000000, 'median': 20000000.0,
     'longest': 30000000}
    """
    final = frames[frames["status"] == "final"]
    length = final["length"].dropna()
    return {"rows": len(frames), "n": len(final), "keys": int(final["key"].nunique()),
            "total": int(length.sum()) if len(length) else None,
            "median": float(length.median()) if len(length) else None,
            "longest": int(length.max()) if len(length) else None}


def frame_headlines(stats: dict[str, Any]) -> list[sec.Headline]:
    """The headline numbers of :func:`frame_stats`.

    Examples
    --------
    >>> stats = {"n": 2, "keys": 1, "total": 40e6, "median": 20e6, "longest": 30e6}
    >>> [h.text for h in frame_headlines(stats)]
    ['2', '1', '40 s', '20 s', '30 s']
    """
    return [
        sec.count("frames", "frames (final)", stats["n"]),
        sec.count("keys", "keys with frames", stats["keys"]),
        sec.duration("total", "total frame duration", stats["total"]),
        sec.duration("median", "median frame duration", stats["median"]),
        sec.duration("longest", "longest frame", stats["longest"]),
    ]


def series_column(df: DataFrame, params: dict[str, Any], function: str
                  ) -> tuple[Column | None, str, float | None]:
    """The column to draw under the frames, its label, and the threshold line if any.

    Examples
    --------
    >>> df = spark.createDataFrame([(1, 0.5, "x")], "t long, loss double, name string")
    >>> col, label, threshold = series_column(df, {"when": "loss > 0.003"}, "threshold_frames")
    >>> label, threshold
    ('loss', 0.003)
    >>> series_column(df, {"value": "loss * 2"}, "delta_frames")[1:]
    ('loss * 2', None)
    """
    if function != "threshold_frames":
        value = params.get("value")
        if not isinstance(value, str):
            return None, "value", None
        return F.expr(value).cast("double"), value, None
    when = params.get("when")
    if not isinstance(when, str):
        return None, "when", None
    numeric = [f.name for f in df.schema.fields if isinstance(f.dataType, T.NumericType)]
    named = [c for c in numeric if re.search(rf"(?<![\w.]){re.escape(c)}(?!\w)", when)]
    if not named:
        return F.expr(when).cast("double"), when, None
    match = _COMPARISON.match(when)
    threshold = float(match.group(3)) if match and match.group(1) == named[0] else None
    return F.col(f"`{named[0]}`").cast("double"), named[0], threshold


def _readings(step: StepRun, key: ShownKey, busiest: Any) -> tuple[pd.DataFrame, str, float | None]:
    """The busiest key's input series (reduced in Spark if long), its label, its threshold."""
    df = step.inputs.get("input")
    params = step.arguments
    time = params.get("time")
    empty = pd.DataFrame({"time": pd.Series(dtype="datetime64[ns]"), "value": []})
    if df is None or not isinstance(time, str) or time not in df.columns:
        return empty, "value", None
    value, label, threshold = series_column(df, params, step.function)
    if value is None:
        return empty, label, None
    if key.present(df):
        df = df.filter(key.column() == F.lit(busiest))
    rows = series(df, time_micros(df, time, params.get("time_unit")), value)
    return pd.DataFrame({"time": as_datetime(rows["t"]), "value": rows["value"]}), label, threshold


def _plot(readings: pd.DataFrame, frames: pd.DataFrame, path: str, label: str,
          threshold: float | None, title: str) -> str:
    from windowkit.plots import plot_frames

    data = readings.rename(columns={"value": label})
    return plot_frames(data, frames, path, time="time", value=label, threshold=threshold,
                       title=title)
