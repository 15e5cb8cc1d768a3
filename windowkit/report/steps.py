"""Which section each windowkit function gets, and building it without failing the report.

A function without a builder here gets its ``rows out`` alone. A builder that raises gives a
section that says why; the other steps are reported all the same.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
from typing import Any

from windowkit.report import section as sec
from windowkit.report.model import RunSummary, StepRun

LOG = logging.getLogger(__name__)

#: function -> (module under windowkit.report, builder); imported when a step needs it.
BUILDERS: dict[str, tuple[str, str]] = {
    **{name: ("frames", "frames_section") for name in (
        "threshold_frames", "boundary_frames", "delta_frames", "aggregate_frames",
        "custom_frames")},
    "fill_frames": ("fill", "fill_section"),
    "multi_granular": ("multigranular", "multi_granular_section"),
    "recurring_items": ("multigranular", "recurring_items_section"),
    "windowed_count_min": ("countmin", "count_min_section"),
    "heavy_hitters": ("countmin", "heavy_hitters_section"),
    "persistent_items": ("persistent", "persistent_section"),
    "exact_persistent_items": ("persistent", "persistent_section"),
    "widen_detect": ("widening", "widening_section"),
}
#: Functions whose ``by`` is the key of their input's source when the step does not say.
KEYED = frozenset(BUILDERS) - {"windowed_count_min", "heavy_hitters", "persistent_items",
                               "exact_persistent_items"}


def step_section(step: StepRun, summary: RunSummary | None = None) -> sec.Section:
    """The section of one step: ``rows out``, then its function's headlines and figure.

    Examples
    --------
    A function without a builder, or with no result at all:

    >>> out = step_section(StepRun("m", "merge_count_min", {}, {}, {}, None))
    >>> [(h.name, h.value) for h in out.headlines], out.note
    ([('rows_out', 0)], 'no rows')
    """
    rows_out = sec.count("rows_out", "rows out", step.rows_out)
    if step.function not in BUILDERS:
        empty = step.result is None or (not step.rows_out and step.result.isEmpty())
        note = "no rows" if empty else f"windowkit draws no figure for {step.function}"
        return sec.Section([rows_out], note=note)
    module, name = BUILDERS[step.function]
    step = with_source_defaults(step, summary)
    extra = {}
    if step.function == "windowed_count_min":
        extra["phi"] = downstream_phi(step, summary)
    if step.function == "heavy_hitters" and summary is not None:
        extra["upstream"] = next((s for s in summary.steps
                                  if s.name == step.input_names.get("input")), None)
    try:
        builder = getattr(importlib.import_module(f"windowkit.report.{module}"), name)
        section = builder(step, **extra)
    except Exception as exc:  # one step's figure must not lose the whole report
        LOG.warning("report: no summary of step %r (%s): %s", step.name, step.function, exc)
        LOG.debug("report: step %r", step.name, exc_info=True)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        section = sec.Section(error=f"{type(exc).__name__}: {first}")
    section.headlines.insert(0, rows_out)
    return section


def with_source_defaults(step: StepRun, summary: RunSummary | None) -> StepRun:
    """``step`` with ``time`` and ``by`` from its input's source when neither the pipeline
    file nor the runner (``inherited``) gave them.

    ``fill_frames`` takes them from its ``data`` input, other functions from ``input``.

    Examples
    --------
    >>> from windowkit.report.model import SourceRun
    >>> run = RunSummary("t", "p.toml", "local", "batch",
    ...                  sources=[SourceRun("calls", "c.csv", "csv", time="t", key="pid")])
    >>> step = StepRun("s", "widen_detect", {}, {}, {"input": "calls"}, None)
    >>> with_source_defaults(step, run).arguments
    {'time': 't', 'by': 'pid'}
    """
    if summary is None or step.inherited:
        return step
    role = "data" if step.function == "fill_frames" else "input"
    source = next((s for s in summary.sources if s.name == step.input_names.get(role)), None)
    if source is None:
        return step
    found: dict[str, Any] = {}
    if source.time and "time" not in step.params:
        found["time"] = source.time
    if source.key and step.function in KEYED and "by" not in step.params:
        found["by"] = source.key
    return dataclasses.replace(step, inherited=found) if found else step


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
