"""The report of a ``widen_detect`` step: detections on a timeline, with their delay.

A detection's *delay* is its ``detected_at`` minus its ``first_time`` (the episode's first
step): how long after the episode began it was reported. The paper's result is that this
delay grows in proportion to the episode's own duration, so the second panel draws the two
against each other.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import functions as F

from windowkit.report import section as sec
from windowkit.report.collect import shown_key, time_micros
from windowkit.report.figures import BLUE, GREY, ORANGE, as_datetime, drawn, subplots, to_png
from windowkit.report.format import format_duration
from windowkit.report.model import StepRun

#: Detections drawn (the earliest), and the most keys given a row of the timeline.
MAX_DETECTIONS, MAX_LABELLED = 500, 30


def widening_section(step: StepRun) -> sec.Section:
    """Headline numbers and the figure of a ``widen_detect`` step.

    Examples
    --------
    >>> from datetime import datetime, timedelta
    >>> from windowkit.spark import split_rejected, widen_detect
    >>> t0 = datetime(2026, 1, 1)
    >>> rows = [(7, 0, "accept", "3", None, "4"), (7, 3, "dup", "4", None, "0"),
    ...         (7, 5, "dup", "4", None, "1"), (7, 9, "dup", "4", None, "2"),
    ...         (7, 20, "execve", None, "/bin/sh", "0")]
    >>> df = spark.createDataFrame([(p, t0 + timedelta(seconds=s), *rest)
    ...                             for p, s, *rest in rows],
    ...                            "pid long, t timestamp, call string, fd string, "
    ...                            "exe string, ret string")
    >>> params = {"time": "t", "by": "pid", "base": "4 seconds", "max_length": 8,
    ...           "max_duration": "1 minute"}
    >>> found, _ = split_rejected(widen_detect(df, **params))
    >>> out = widening_section(StepRun("shell", "widen_detect", params, {"input": df},
    ...                        {"input": "calls"}, found))
    >>> [(h.name, h.text) for h in out.headlines]  # doctest: +NORMALIZE_WHITESPACE
    [('detections', '1'), ('keys', '1'), ('median_delay', '32 s'),
     ('max_delay', '32 s')]
    >>> out.figure.png[:4]
    b'\\x89PNG'
    """
    args = step.arguments
    key, unit, result = shown_key(args.get("by")), args.get("time_unit"), step.result
    found = pd.DataFrame({c: [] for c in ("key", "first", "last", "detected", "level")})
    if result is not None:  # a row per detection: few, read in one job
        found = result.select(key.column().cast("string").alias("key"),
                              time_micros(result, "first_time", unit).alias("first"),
                              time_micros(result, "last_time", unit).alias("last"),
                              time_micros(result, "detected_at", unit).alias("detected"),
                              F.col("level")).toPandas()
    delay = (found["detected"] - found["first"]).dropna()
    headlines = [sec.count("detections", "detections", len(found)),
                 sec.count("keys", "keys with a detection", found["key"].nunique()),
                 sec.duration("median_delay", "median delay",
                              float(delay.median()) if len(delay) else None),
                 sec.duration("max_delay", "max delay", float(delay.max()) if len(delay) else None)]
    if not len(found):
        return sec.Section(headlines, note="no rows: nothing detected")
    pdf = (found.sort_values(["detected", "key"], kind="stable").head(MAX_DETECTIONS)
           .reset_index(drop=True))
    png = plot_detections(pdf, key.label)
    return sec.Section(headlines, sec.Figure(
        png, alt=f"Timeline of {len(pdf)} detections per {key.label}, and their delay against the "
                 "episode's duration",
        caption="Top: each detected episode (bar: first to last step) and when it was "
                "detected (dot), one row per key. Bottom: delay (detection − first step) "
                "against the episode's duration"))


@drawn
def plot_detections(detections: pd.DataFrame, key: str) -> bytes:
    """Timeline of detections (one row per key) above delay against episode duration.

    ``detections``: ``key`` (str), ``first``, ``last``, ``detected`` (µs).

    Examples
    --------
    >>> d = pd.DataFrame({"key": ["7"], "first": [0], "last": [20_000_000],
    ...                   "detected": [32_000_000]})
    >>> plot_detections(d, "pid")[:4]
    b'\\x89PNG'
    """
    keys = list(dict.fromkeys(detections["key"]))
    timeline = 1.4 + 0.22 * min(len(keys), MAX_LABELLED)  # inches: a row per key, up to 30
    # the keys label the rows: a margin to fit them, whatever their length
    fig, (top, bottom) = subplots(2, height=timeline + 2.4, layout="tight",
                                  gridspec_kw={"height_ratios": [timeline, 2.4]})
    row = {k: i for i, k in enumerate(keys)}
    y = detections["key"].map(row).to_numpy()
    first, last = as_datetime(detections["first"]), as_datetime(detections["last"])
    detected = as_datetime(detections["detected"])
    top.hlines(y, first, detected, color=GREY, lw=0.8, label="delay")
    top.hlines(y, first, last, color=BLUE, lw=4, label="episode (first to last step)")
    top.scatter(detected, y, color=ORANGE, s=14, zorder=3, label="detected")
    delay = (detections["detected"] - detections["first"]).to_numpy()
    if len(detections) <= MAX_LABELLED:
        for yi, when, d in zip(y, detected, delay, strict=True):
            top.annotate(format_duration(d), (when, yi), xytext=(4, 0),
                         textcoords="offset points", va="center", fontsize=7)
    top.set_yticks(range(len(keys)), keys if len(keys) <= MAX_LABELLED else [""] * len(keys),
                   fontsize=7)
    top.set_ylim(len(keys) - 0.5, -0.5)  # the first detection on top
    top.margins(x=0.1)  # room for the delays' labels
    top.set_ylabel(key)
    top.set_xlabel("time")
    top.set_title(f"{len(detections)} detections", loc="left")
    # above the axes, right of the title: never over a detection
    top.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, fontsize=7, frameon=False)
    span = (detections["last"] - detections["first"]).to_numpy() / 1e6
    bottom.scatter(span, delay / 1e6, color=ORANGE, s=14)
    reach = float(max(np.max(span, initial=0), np.max(delay / 1e6, initial=0), 1))
    bottom.plot([0, reach], [0, reach], color=GREY, lw=0.8, ls="--", label="delay = duration")
    bottom.set_xlabel("episode duration, first to last step (s)")
    bottom.set_ylabel("delay (s)")
    bottom.legend(loc="lower right", fontsize=7)  # a delay is never below the duration
    return to_png(fig)
