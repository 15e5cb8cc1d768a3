"""The HTML report of a pipeline run: one self-contained page, figures embedded.

>>> from windowkit.report import RunSummary, write_report

Importing this package is cheap: Spark, matplotlib and Jinja2 are imported by
:func:`write_report` when it runs.
"""

from __future__ import annotations

import os

from windowkit.report.model import RunSummary, SourceRun, StepRun

__all__ = ["RunSummary", "SourceRun", "StepRun", "write_report"]


def write_report(summary: RunSummary, path: str) -> str:
    """Write the run's report to ``path`` (one HTML file, no other resource); return ``path``.

    Per step: what was asked (function and parameters), its headline numbers, its rejected
    rows by reason, and a figure drawn from small Spark collects of its result and inputs.

    Parameters
    ----------
    summary : RunSummary
        The run, as the pipeline runner filled it in.
    path : str
        The HTML file to write (its folder is created if needed).

    Returns
    -------
    str
        ``path``.

    Examples
    --------
    >>> import tempfile
    >>> run = RunSummary("network day", "pipelines/demo.toml", "local[2]", "batch")
    >>> out = write_report(run, os.path.join(tempfile.mkdtemp(), "report", "index.html"))
    >>> "<h1>network day</h1>" in open(out, encoding="utf-8").read()
    True
    """
    from windowkit.report.render import render_report

    page = render_report(summary)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(page)
    return path
