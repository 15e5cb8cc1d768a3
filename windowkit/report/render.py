"""The report page: a run's summary and its steps' sections through one Jinja2 template.

Autoescaping is on: step names and parameters come from a user's pipeline file.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from windowkit.report.format import format_number, format_param, format_seconds
from windowkit.report.model import RunSummary, StepRun
from windowkit.report.section import Section

#: Reasons a row is set aside, always shown (with 0 when none was).
REASONS = ("malformed", "late")
#: Sections built at once (a pipeline's steps, all at once as a rule). A section spends most
#: of its time waiting on small Spark jobs, each with a fixed cost in the driver: while one
#: waits, another draws its figure or starts its own job (on the demo, 8 at once took about
#: half the time of 2, on two busy cores).
SECTION_THREADS = 8


@dataclass
class StepView:
    """What the template shows of one step."""

    name: str
    function: str
    params: list[tuple[str, str, bool]]
    inputs: list[tuple[str, str]]
    rejected: list[tuple[str, int, str]]
    rejected_total: int
    elapsed: str
    output: str
    section: Section = field(default_factory=Section)
    description: str = ""


def step_view(step: StepRun, summary: RunSummary | None = None,
              section: Section | None = None) -> StepView:
    """The template's view of ``step``; its section is built unless given.

    Parameters are listed as the pipeline file gave them, then those the runner took from the
    inputs (flagged ``True``); rejected rows by reason, ``malformed`` and ``late`` always.

    Examples
    --------
    >>> step = StepRun("frames", "threshold_frames", {"when": "x > 1"}, {}, {"input": "src"},
    ...                None, rejected={"late": 2}, inherited={"time": "t"})
    >>> view = step_view(step, section=Section())
    >>> view.params, view.rejected
    ([('when', 'x > 1', False), ('time', 't', True)], [('malformed', 0, '0'), ('late', 2, '2')])
    """
    from windowkit.report.steps import step_section, with_source_defaults

    step = with_source_defaults(step, summary)
    if section is None:
        section = step_section(step, summary)
    params = [(k, format_param(v), False) for k, v in step.params.items()]
    params += [(k, format_param(v), True) for k, v in step.inherited.items()
               if k not in step.params]
    counts = {reason: 0 for reason in REASONS}
    counts.update({str(k): int(v) for k, v in step.rejected.items()})
    return StepView(
        name=step.name, function=step.function, params=params,
        inputs=[(role, step.input_names.get(role, "")) for role in
                dict.fromkeys([*step.input_names, *step.inputs])],
        rejected=[(reason, n, format_number(n)) for reason, n in counts.items()],
        rejected_total=sum(counts.values()),
        elapsed=format_seconds(step.elapsed_s), output=step.output, section=section,
        description=step.description)


def render_report(summary: RunSummary, views: list[StepView] | None = None) -> str:
    """The whole page as one HTML string (figures embedded as ``data:`` URIs).

    Examples
    --------
    >>> from windowkit.report.model import SourceRun
    >>> run = RunSummary("<demo>", "demo.toml", "local[2]", "batch",
    ...                  sources=[SourceRun("bgp", "bgp.csv", "csv", rows=1200)])
    >>> page = render_report(run)
    >>> "&lt;demo&gt;" in page and "<demo>" not in page, "1,200" in page
    (True, True)
    """
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(loader=PackageLoader("windowkit.report", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["number"] = format_number
    env.filters["seconds"] = format_seconds
    if views is None:
        views = step_views(summary)
    context: dict[str, Any] = {"run": summary, "steps": views}
    return env.get_template("report.html.j2").render(**context)


def step_views(summary: RunSummary, threads: int = SECTION_THREADS) -> list[StepView]:
    """The view of every step of ``summary``, in its order, ``threads`` sections built at once.

    Examples
    --------
    >>> run = RunSummary("t", "p.toml", "local", "batch", steps=[
    ...     StepRun(f"s{i}", "merge_count_min", {}, {}, {}, None) for i in range(4)])
    >>> [view.name for view in step_views(run, threads=2)]
    ['s0', 's1', 's2', 's3']
    """
    if threads < 1:
        msg = f"`threads` must be at least 1; got {threads}"
        raise ValueError(msg)
    from windowkit.report.figures import warm_up

    # matplotlib's import and first figure take seconds of the driver's CPU: while the
    # sections wait on their first Spark jobs, not after
    warm_up()
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="report") as pool:
        return list(pool.map(lambda step: step_view(step, summary), summary.steps))
