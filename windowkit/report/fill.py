"""The report of a ``fill_frames`` step: frames on a timeline, the rows they were filled with.

The counts come from what the run already wrote, never from running ``fill_frames`` again:
the frames to fill are the step's ``input`` (those of the filled ``statuses``), each with the
rows the step attached to it, so frames that met no row are counted too. A step that
aggregated its rows (``aggregates``) gives one row per frame and no row count: its section
shows the frames, and no count of rows attached.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from windowkit.core.durations import to_micros
from windowkit.report import section as sec
from windowkit.report.collect import series, shown_key, time_micros, top_key
from windowkit.report.figures import (
    BLUE,
    GREY,
    ORANGE,
    as_datetime,
    drawn,
    empty_note,
    subplots,
    to_png,
)
from windowkit.report.format import format_duration
from windowkit.report.model import StepRun

_ROWS = "wk_rows"
#: The most frames of one key drawn.
MAX_FRAMES = 300
#: Bars of the filler rows' histogram.
HISTOGRAM_BINS = 240
#: A label's character, as a fraction of the plot's width (8-point text on the report's
#: figure width, with a margin), so that labels of neighbouring frames do not run together.
CHAR_WIDTH = 0.0075
#: Parameters of fill_frames that shape the join (``aggregates`` is the step's own business).
_STATUSES = ("final",)
#: Columns that tell one frame row from another in a frames output and in what fill_frames
#: attached to it (a fragment of a frame is told apart by its ``status`` and ``last``).
_FRAME_IDENTITY = ("frame_id", "start", "status", "last")


def fill_section(step: StepRun) -> sec.Section:
    """Headline numbers and the figure of a ``fill_frames`` step.

    Examples
    --------
    >>> frames = spark.createDataFrame([("r1", 0, 100, 200, 150, "final")],
    ...     "router string, frame_id long, start long, end long, last long, status string")
    >>> bgp = spark.createDataFrame([("r1", t) for t in (60, 75, 120, 250)],
    ...                             "router string, t long")
    >>> params = {"time": "t", "by": "router", "time_unit": "s"}
    >>> from windowkit.spark import fill_frames
    >>> out = fill_section(StepRun("fill", "fill_frames", params,
    ...     {"input": frames, "data": bgp}, {"input": "loss", "data": "bgp"},
    ...     fill_frames(frames, bgp, **params)))
    >>> [(h.name, h.value) for h in out.headlines]
    [('frames', 1), ('frames_filled', 1), ('rows_attached', 2), ('frames_empty', 0)]
    """
    frames, data = step.inputs.get("input"), step.inputs.get("data")
    if frames is None or data is None:
        return sec.Section(error="the step has no `input` frames or no `data` rows")
    args = step.arguments
    key, unit = shown_key(args.get("by")), args.get("time_unit")
    counted = frame_counts(frames, step.result, args)
    end = F.coalesce(time_micros(counted, "end", unit), time_micros(counted, "last", unit) + 1)
    # one job: a frame's few columns; the rest is pandas
    per_frame = counted.select(
        (key.column() if key.keyed else F.lit(None).cast("string")).alias("key"),
        time_micros(counted, "start", unit).alias("start"), end.alias("end"),
        F.col(_ROWS).alias("rows")).toPandas()
    rows = per_frame["rows"]
    known = bool(len(rows)) and bool(rows.notna().all())
    rows = rows.fillna(0).astype("int64")
    headlines = [sec.count("frames", "frames to fill", len(per_frame))]
    if not aggregated(args):
        headlines += [
            sec.count("frames_filled", "frames filled", int((rows > 0).sum())),
            sec.count("rows_attached", "rows attached", int(rows.sum())),
            sec.count("frames_empty", "frames with no rows", int((rows == 0).sum())),
        ]
    # rows attached to no frame at all: the step wrote none (an aggregated step writes a row
    # per frame, so it filled every frame it counts)
    if not len(per_frame) or (known and not rows.sum()):
        return sec.Section(headlines, note="no rows: no frame was filled")
    figure = _figure(step, data, per_frame.assign(rows=rows), known)
    return sec.Section(headlines, figure)


def aggregated(params: dict[str, Any]) -> bool:
    """Whether the step aggregated each frame's rows (one row per frame) rather than attach
    them.

    Examples
    --------
    >>> aggregated({"aggregates": {"n": "count(*)"}}), aggregated({"time": "t"})
    (True, False)
    """
    return params.get("aggregates") is not None


def frame_counts(frames: DataFrame, filled: DataFrame | None, params: dict[str, Any]
                 ) -> DataFrame:
    """Each frame the step fills, with ``wk_rows``, the rows the step attached to it (0 for
    none; null when it aggregated them), from its written input and output alone.

    Examples
    --------
    >>> frames = spark.createDataFrame([(0, 10, 20, 15, "final"), (1, 50, 60, 55, "final"),
    ...     (2, 70, None, 72, "partial")], "frame_id long, start long, end long, last long, "
    ...     "status string")
    >>> filled = spark.createDataFrame([(0, 10, 20, 15, "final", t) for t in (12, 18, 19)],
    ...     "frame_id long, start long, end long, last long, status string, t long")
    >>> sorted(tuple(r) for r in frame_counts(frames, filled, {"time": "t"}).select(
    ...        "frame_id", "wk_rows").collect())
    [(0, 3), (1, 0)]
    """
    statuses = list(params.get("statuses") or _STATUSES)
    if aggregated(params) and filled is not None:
        # one row per frame already, frames without rows included
        return filled.filter(F.col("status").isin(statuses)).withColumn(
            _ROWS, F.lit(None).cast("long"))
    key = shown_key(params.get("by"))
    identity = [c for c in (*(key.names if key.keyed else ()), *_FRAME_IDENTITY)
                if c in frames.columns]
    wanted = frames.filter(F.col("status").isin(statuses))
    if filled is None:
        return wanted.withColumn(_ROWS, F.lit(0).cast("long"))
    attached = filled.groupBy(*identity).agg(F.count(F.lit(1)).alias(_ROWS))
    met = wanted.join(attached, identity, "left")
    return met.withColumn(_ROWS, F.coalesce(F.col(_ROWS), F.lit(0).cast("long")))


@drawn
def plot_fill(frames: pd.DataFrame, rows: pd.DataFrame, attached: pd.DataFrame,
              title: str) -> bytes:
    """One key's frames (shaded, their shifted intervals lighter), each labelled with its
    rows where the label has room, over a histogram of the key's filler rows (grey) and of
    those attached to a frame (orange); PNG bytes.

    ``frames``: ``start``, ``end``, ``lo``, ``hi`` (datetimes) and ``rows``; ``rows`` and
    ``attached``: a ``time`` column.

    Examples
    --------
    >>> t = pd.to_datetime(["2024-01-01 00:01", "2024-01-01 00:02"])
    >>> f = pd.DataFrame({"start": t[:1], "end": t[1:], "lo": t[:1], "hi": t[1:], "rows": [1]})
    >>> plot_fill(f, pd.DataFrame({"time": t}), pd.DataFrame({"time": t[:1]}), "r1")[:4]
    b'\\x89PNG'
    """
    from matplotlib import dates

    fig, ax = subplots(height=3.2)
    if not len(frames):
        empty_note(ax, "no frame")
        return to_png(fig)
    at = {c: dates.date2num(frames[c]) for c in ("start", "end", "lo", "hi")}
    for i in range(len(frames)):
        ax.axvspan(at["lo"][i], at["hi"][i], color=BLUE, alpha=0.08, lw=0,
                   label="frame widened by before/after" if i == 0 else None)
        ax.axvspan(at["start"][i], at["end"][i], color=BLUE, alpha=0.25, lw=0,
                   label="frame" if i == 0 else None)
    x_lo = min(at["lo"].min(), *dates.date2num(rows["time"])[:1])
    x_hi = max(at["hi"].max(), *dates.date2num(rows["time"])[-1:])
    edges = np.linspace(x_lo, x_hi, HISTOGRAM_BINS + 1)
    ax.hist([dates.date2num(rows["time"]), dates.date2num(attached["time"])], bins=edges,
            color=[GREY, ORANGE], label=["filler rows", "attached to a frame"],
            histtype="stepfilled", alpha=0.8)
    top = ax.get_ylim()[1]
    ax.set_ylim(0, top * 1.45)  # room above the bars for the frames' labels
    # a step that aggregated its rows gives no count to label a frame with
    texts = [f"{n:,}" for n in frames["rows"]] if "rows" in frames else []
    middles = ((at["start"] + at["end"]) / 2)[:len(texts)]
    width = CHAR_WIDTH * (x_hi - x_lo)
    for text, middle, row in zip(texts, middles,
                                 label_rows(middles, [width * (len(t) + 1) for t in texts]),
                                 strict=True):
        if row is not None:
            ax.text(middle, 0.97 - 0.085 * row, text, ha="center", va="top", fontsize=8,
                    color=BLUE, transform=ax.get_xaxis_transform())
    ax.xaxis_date()
    minutes = (x_hi - x_lo) * 24 * 60 / HISTOGRAM_BINS
    ax.set_ylabel(f"rows per {format_duration(minutes * 60e6)}")
    ax.set_xlabel("time")
    ax.set_title(title)
    ax.legend(loc="center right", fontsize=7)
    return to_png(fig)


def label_rows(middles, widths, rows: int = 3) -> list[int | None]:
    """The text row (0 at the top) of each label centred at ``middles`` (in order), so that
    no two labels of a row overlap; None for a label that finds no room.

    Examples
    --------
    >>> label_rows([0, 1, 2, 10], [3, 3, 3, 3], rows=2)
    [0, 1, None, 0]
    """
    ends = [-np.inf] * rows
    out: list[int | None] = []
    for middle, width in zip(middles, widths, strict=True):
        row = next((r for r in range(rows) if middle - width / 2 > ends[r]), None)
        if row is not None:
            ends[row] = middle + width / 2
        out.append(row)
    return out


def _figure(step: StepRun, data: DataFrame, per_frame: pd.DataFrame, known: bool = True
            ) -> sec.Figure:
    params = step.arguments
    key, unit, time = shown_key(params.get("by")), params.get("time_unit"), params["time"]
    busiest = None
    if key.keyed:
        busiest = top_key(per_frame["key"], weight=per_frame["rows"] if known else None)
        per_frame = per_frame[per_frame["key"] == busiest]
        data = data.filter(key.column() == F.lit(busiest))
    before, after = _shift(params, "before"), _shift(params, "after")
    shown = per_frame.sort_values("start", kind="stable").head(MAX_FRAMES)
    lo = shown["start"].to_numpy(dtype="int64") - before
    hi = shown["end"].to_numpy(dtype="int64") + after
    t = time_micros(data, time, unit)
    nearby = data.filter((t >= F.lit(int(lo.min()))) & (t < F.lit(int(hi.max()))))
    times = series(nearby, time_micros(nearby, time, unit), F.lit(1.0))["t"].to_numpy()
    table = pd.DataFrame({
        "start": as_datetime(shown["start"]), "end": as_datetime(shown["end"]),
        "lo": as_datetime(lo), "hi": as_datetime(hi)})
    name = f"{key.label} = {busiest}" if key.keyed else "all keys"
    title, chosen = f"{name}: {len(table)} frames", "the key with the most frames)"
    if known:
        table["rows"] = shown["rows"].astype("int64").to_numpy()
        title += f", {int(table['rows'].sum()):,} rows attached"
        chosen = "the key with the most rows attached), each labelled with its rows where "\
                 "there is room"
    png = plot_fill(table, pd.DataFrame({"time": as_datetime(times)}),
                    pd.DataFrame({"time": as_datetime(times[_inside(times, lo, hi)])}), title)
    return sec.Figure(
        png,
        alt=f"Timeline of the frames of {name} with the filler rows of "
            f"{step.input_names.get('data', 'data')} as ticks",
        caption=f"The frames of {name} ({chosen}; below: the key's filler rows over time, "
                "orange those a frame took",
    )


def _inside(times: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Whether each time lies in some interval ``[lo, hi)`` (intervals may overlap)."""
    order = np.argsort(lo, kind="stable")
    lo, reach = lo[order], np.maximum.accumulate(hi[order])
    last = np.searchsorted(lo, times, side="right") - 1  # the last interval starting before
    return (last >= 0) & (times < reach[np.maximum(last, 0)])


def _shift(params: dict[str, Any], name: str) -> int:
    """``before``/``after`` in µs, with fill_frames' defaults (a zero duration allowed)."""
    from windowkit.spark import fill_frames

    value = params.get(name, inspect.signature(fill_frames).parameters[name].default)
    text = str(value).strip().split(" ")[0]
    if value == 0 or text in ("0", "0.0"):
        return 0
    return to_micros(value, name)
