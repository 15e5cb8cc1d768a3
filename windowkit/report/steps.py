"""Which section each windowkit function gets, and building it without failing the report.

Each function's section builder is named by its technique's descriptor (the ``report`` of its
:class:`~windowkit.technique.StepFunction`, :mod:`windowkit.techniques`). A function without one
gets its ``rows out`` alone. A builder that raises gives a section that says why; the other
steps are reported all the same.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from typing import Any

from windowkit.report import section as sec
from windowkit.report.model import RunSummary, StepRun
from windowkit.techniques import step_functions

LOG = logging.getLogger(__name__)

#: function -> its declaration (its report section, which inputs give its time and key).
FUNCTIONS = step_functions()


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
    function = FUNCTIONS.get(step.function)
    if function is None or function.report is None:
        empty = step.result is None or (not step.rows_out and step.result.isEmpty())
        note = "no rows" if empty else f"windowkit draws no figure for {step.function}"
        return sec.Section([rows_out], note=note)
    step = with_source_defaults(step, summary)
    try:
        builder = function.report_builder()
        # a section drawn with other steps of the run (Count-Min's) asks for the run
        extra = {"summary": summary} if "summary" in inspect.signature(builder).parameters \
            else {}
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

    ``fill_frames`` takes them from its ``data`` input, other functions from ``input``; a step
    of no windowkit function (a ``sql`` step) takes none.

    Examples
    --------
    >>> from windowkit.report.model import SourceRun
    >>> run = RunSummary("t", "p.toml", "local", "batch",
    ...                  sources=[SourceRun("calls", "c.csv", "csv", time="t", key="pid")])
    >>> step = StepRun("s", "widen_detect", {}, {}, {"input": "calls"}, None)
    >>> with_source_defaults(step, run).arguments
    {'time': 't', 'by': 'pid'}
    """
    function = FUNCTIONS.get(step.function)
    if summary is None or step.inherited or function is None:
        return step  # a sql step's query names its columns itself: it inherits nothing
    from_input = function.from_input
    role = from_input.get("time", ("input", "time"))[0]
    source = next((s for s in summary.sources if s.name == step.input_names.get(role)), None)
    if source is None:
        return step
    found: dict[str, Any] = {}
    if source.time and "time" not in step.params:
        found["time"] = source.time
    if source.key and "by" in from_input and "by" not in step.params:
        found["by"] = source.key
    return dataclasses.replace(step, inherited=found) if found else step
