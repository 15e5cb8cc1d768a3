"""What a pipeline run hands to the report: its sources and steps, with their Spark results.

The runner (:mod:`windowkit.pipeline`) fills these in; :func:`windowkit.report.write_report`
turns them into one HTML page. Results are batch DataFrames read back from what the run wrote,
so a streaming run is reported the same way as a batch one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SourceRun:
    """One source of a run: where it was read from, and how much of it.

    Examples
    --------
    >>> SourceRun("bgp", "data/bgp.parquet", "parquet", rows=1200).rows
    1200
    """

    name: str
    path: str
    format: str
    rows: int | None = None
    time: str | None = None
    key: str | None = None


@dataclass
class StepRun:
    """One step of a run, done.

    Attributes
    ----------
    name : str
        The step's name in the pipeline file.
    function : str
        The windowkit function it called (``"threshold_frames"``, ``"widen_detect"``, ...).
    params : dict
        The parameters as the pipeline file gives them (durations as strings).
    inputs : dict
        Input role -> batch DataFrame: ``"input"`` for every step, ``"data"`` too for
        ``fill_frames``; a step's input is a source or an earlier step's ``result``.
    input_names : dict
        Input role -> the source or step name it came from.
    result : DataFrame
        The step's output rows, rejected rows left out (a batch DataFrame).
    rejected : dict
        Reason (``"malformed"``, ``"late"``) -> number of input rows set aside.
    rows_out : int
        Rows in ``result``.
    elapsed_s : float
        Wall-clock seconds of the step (writing its output included).
    output : str
        Where the step's rows were written.
    inherited : dict
        Parameters the pipeline file left out that the runner took from the step's inputs
        (``time``, ``by``, ``time_unit``, ...), as plain values. The report computes with
        ``{**inherited, **params}`` and shows them apart from what the file gave.
    description : str
        The step's ``description`` in the pipeline file (what it is for, in words).
    """

    name: str
    function: str
    params: dict[str, Any]
    inputs: dict[str, Any]
    input_names: dict[str, str]
    result: Any
    rejected: dict[str, int] = field(default_factory=dict)
    rows_out: int = 0
    elapsed_s: float = 0.0
    output: str = ""
    inherited: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    @property
    def arguments(self) -> dict[str, Any]:
        """The parameters the function was called with: ``inherited`` overridden by ``params``.

        Examples
        --------
        >>> step = StepRun("s", "widen_detect", {"base": "4 seconds"}, {}, {}, None,
        ...                inherited={"time": "time", "by": "pid"})
        >>> step.arguments
        {'time': 'time', 'by': 'pid', 'base': '4 seconds'}
        """
        return {**self.inherited, **self.params}


@dataclass
class RunSummary:
    """A whole run: the pipeline file, where it ran, its sources and steps.

    Examples
    --------
    >>> RunSummary("demo", "pipelines/demo.toml", "local[*]", "batch").mode
    'batch'
    """

    title: str
    pipeline_path: str
    master: str
    mode: str
    sources: list[SourceRun] = field(default_factory=list)
    steps: list[StepRun] = field(default_factory=list)
    rejected_path: str = ""
    elapsed_s: float = 0.0
