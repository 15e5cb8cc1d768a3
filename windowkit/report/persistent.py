"""The report of ``persistent_items`` and ``exact_persistent_items`` steps: the heatmap.

Rows are the items reported in the most windows (:func:`windowkit.plots.persistence_matrix`
orders them), columns the windows, a cell the item's persistence in the window as a fraction
of its slots (the sketch's ``estimate``, or the exact ``persistence``).
"""

from __future__ import annotations

import inspect

import pandas as pd

from windowkit.report import section as sec
from windowkit.report.collect import time_micros
from windowkit.report.figures import as_datetime, png_of
from windowkit.report.model import StepRun

#: Items drawn in the heatmap.
TOP = 30


def persistent_section(step: StepRun) -> sec.Section:
    """Headline numbers and the heatmap of a persistent-items step.

    Examples
    --------
    >>> from windowkit.spark import exact_persistent_items, split_rejected
    >>> seen = [("a", 1), ("a", 12), ("a", 14), ("b", 15), ("a", 21), ("b", 37)]
    >>> df = spark.createDataFrame(seen, "ip string, s long")
    >>> params = {"item": "ip", "time": "s", "time_unit": "s", "slot": "10 seconds",
    ...           "window_slots": 4, "alpha": 0.5}
    >>> found, _ = split_rejected(exact_persistent_items(df, **params))
    >>> out = persistent_section(StepRun("p", "exact_persistent_items", params, {"input": df},
    ...                          {"input": "flows"}, found))
    >>> [(h.name, h.value) for h in out.headlines], out.figure.png[:4]
    ([('items', 2), ('windows', 3), ('reports', 4)], b'\\x89PNG')
    """
    args = step.arguments
    item, result = args.get("item"), step.result
    value = "persistence" if step.function == "exact_persistent_items" else "estimate"
    if not isinstance(item, str):
        return sec.Section(error="the step has no `item` column name")
    reports = pd.DataFrame({c: [] for c in ("window_end_slot", "window_end", item, value)})
    if result is not None:  # a report per item and window: few rows, read in one job
        end = time_micros(result, "window_end", args.get("time_unit"))
        reports = result.select("window_end_slot", end.alias("window_end"), item,
                                value).toPandas()
    stats = {"items": reports[item].nunique(), "windows": reports["window_end_slot"].nunique(),
             "reports": len(reports)}
    headlines = [sec.count("items", "items reported", stats["items"]),
                 sec.count("windows", "windows with a report", stats["windows"]),
                 sec.count("reports", "reports (item, window)", stats["reports"])]
    if not stats["reports"]:
        return sec.Section(headlines, note="no rows: no persistent item")
    per_item = reports.groupby(item).agg(wk_n=(value, "size"), wk_s=(value, "sum")).reset_index()
    top = per_item.sort_values(["wk_n", "wk_s", item], ascending=[False, False, True]).head(TOP)
    pdf = reports[reports[item].isin(top[item])].reset_index(drop=True)
    pdf["window_end"] = as_datetime(pdf["window_end"])
    slots = _window_slots(step)

    def draw(path: str) -> str:
        from windowkit.plots import plot_persistence

        return plot_persistence(pdf, path, item=item, value=value, window_slots=slots, top=TOP)

    shown = min(TOP, stats["items"])
    return sec.Section(headlines, sec.Figure(
        png_of(draw),
        alt=f"Heatmap of the persistence of the {shown} items reported in the most windows",
        caption=f"The {shown} items reported in the most windows (rows) over the windows "
                f"(columns); colour: {value} as a fraction of the window's {slots} slots"
                + blank_note(pdf, item, value, slots)))


def blank_note(reports: pd.DataFrame, item: str, value: str, slots: int) -> str:
    """What the heatmap's blank cells mean, or that it has none.

    Examples
    --------
    >>> r = pd.DataFrame({"window_end_slot": [3, 3, 4], "ip": ["a", "b", "b"],
    ...                   "estimate": [2.0, 3.0, 4.0]})
    >>> blank_note(r, "ip", "estimate", 4)
    '; blank where the item was not reported'
    >>> blank_note(r[r["ip"] == "b"], "ip", "estimate", 4)
    '; every item shown was reported in every window'
    """
    from windowkit.plots import persistence_matrix

    grid = persistence_matrix(reports, item=item, value=value, window_slots=slots, top=TOP)
    if grid.isna().to_numpy().any():
        return "; blank where the item was not reported"
    return "; every item shown was reported in every window"


def _window_slots(step: StepRun) -> int:
    from windowkit import spark as wk

    default = inspect.signature(getattr(wk, step.function)).parameters["window_slots"].default
    return int(step.arguments.get("window_slots", default))

