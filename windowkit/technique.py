"""What a technique declares: its Spark functions, CLI subcommands, report sections, examples.

A :class:`Technique` is the one object the command line, the pipeline runner, the report, the
Spark layer's exports and the tests read to find a technique (:mod:`windowkit.techniques`
holds one per technique). A :class:`StepFunction` declares one of its Spark functions: how a
pipeline step calls it, checks it and reports it. Both are plain data: modules are named by
their dotted paths and imported only when used, so reading the declarations imports neither
Spark nor the technique's code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

#: How a duration parameter is read: a time span; a time span or a count of rows
#: (``"3 rows"``); a time span where zero means "no reach".
DurationKind = Literal["time", "time or rows", "time or zero"]

#: ``from_input`` of a function reading event time: the input source's time column, its time
#: unit and (on a stream) its watermark delay as ``late``.
TIMED: dict[str, tuple[str, str]] = {"time": ("input", "time"),
                                     "time_unit": ("input", "time_unit"),
                                     "late": ("input", "watermark")}
#: ``from_input`` of a function reading event time per key: :data:`TIMED` and the source's key.
KEYED: dict[str, tuple[str, str]] = {**TIMED, "by": ("input", "key")}


def load(path: str) -> Any:
    """The object a ``"package.module:name"`` path names (the module alone without ``:``).

    Examples
    --------
    >>> load("windowkit.technique:load") is load
    True
    """
    module, _, name = path.partition(":")
    found = importlib.import_module(module)
    return getattr(found, name) if name else found


@dataclass(frozen=True)
class SqlSignature:
    """How a function of :mod:`windowkit.spark` is also a SQL table function
    (:func:`windowkit.spark.register_sql`): what its SQL call runs, derived from the function.

    The SQL function takes the function's own parameters, by name and with its defaults,
    besides the DataFrame (the ``TABLE`` argument); the parameters its ``from_input`` reads as
    ``time``, ``key`` and ``time_unit`` name the event time, the key and the time's unit.

    Attributes
    ----------
    operator : str
        ``"module:builder"`` under ``windowkit.spark``: the builder the function itself calls
        to make its operator's factory from its parameters (as keywords; it ignores those it
        does not read), checking them as the function does; a SQL call also gives it the
        ``table``'s schema.
    inputs : dict or str
        The operator's inputs -> the parameter holding each one's SQL expression (a column
        name, or a predicate for a ``"code"`` input), over the table's columns; or
        ``"module:function"`` under ``windowkit.spark`` giving that mapping to SQL
        expressions from the operator, the ``table``'s schema and the parameters.
    columns : str
        ``"module:NAME"`` under ``windowkit.spark``: the output's columns after the key, as the
        function projects them: a list of the operator's columns (``rejected`` and ``detail``
        included), or a callable taking the operator, the ``table``'s schema and the
        parameters (as keywords) and giving that list, where an entry may be ``(output name,
        operator column or function of the operator's output[, kind])``, a kind being one
        of the operator's, a Spark type, or ``("array", kind)``.
    defaults : dict
        The operator's inputs -> the SQL text each one takes when its parameter is None (an
        input with neither is left out, as the function leaves it out).
    valid : str or None
        ``"module:function"`` under ``windowkit.spark``: the SQL predicate a row must satisfy
        to reach the operator (else it is malformed), as the function's own check of its
        rows; it takes the operator, the SQL text of the row's event time in µs and the SQL
        texts of the inputs given. None: the rows' time and key alone.
    sites : str or None
        ``"module:function"`` under ``windowkit.spark`` for a function that routes each row
        to a shard of its own choosing (a site, not a key): given the ``table``'s schema,
        the SQL text of the row's event time in µs and the parameters, it gives a
        :class:`~windowkit.spark.sql.Sites`: the SQL text of each row's shard and the
        number of shards, and whether the operator's time is the row's rank in time order
        instead. None: rows are routed by the key or the operator's ``route``.
    time : str or None
        The column of the table holding the event time, for a function that takes no
        ``time`` parameter (e.g. ``heavy_hitters``' snapshots: ``"time"``).
    time_unit : str or None
        ``"module:function"`` under ``windowkit.spark`` giving the unit the call reads an
        integer time column in, from the ``table``'s schema and the parameters (e.g. a
        sequence number read as milliseconds). None: the ``time_unit`` parameter.

    Examples
    --------
    >>> SqlSignature("frames:threshold_operator", {"value": "when"},
    ...              "frames:FRAME_COLUMNS").inputs
    {'value': 'when'}
    """

    operator: str
    inputs: Mapping[str, str] | str
    columns: str
    defaults: Mapping[str, str] = field(default_factory=dict)
    valid: str | None = None
    sites: str | None = None
    time: str | None = None
    time_unit: str | None = None


@dataclass(frozen=True)
class StepFunction:
    """One public function of :mod:`windowkit.spark`, as a pipeline step and a report section.

    Attributes
    ----------
    name : str
        The function's name in :mod:`windowkit.spark`.
    module : str
        Its module under ``windowkit.spark``.
    roles : tuple of (parameter, key) pairs
        The DataFrame parameters and the step-table key naming the source or step for each
        (``input`` first).
    split : str or None
        The function of :mod:`windowkit.spark` splitting a result into (rows, rejected rows)
        (``"split_rejected"``); None: nothing is rejected.
    reason : str or None
        The column of a rejected row holding why (``"malformed"``, ``"late"``).
    from_input : dict
        Parameter -> (role, attribute of that input: ``time``, ``key``, ``time_unit``,
        ``watermark``), used when the step does not give the parameter.
    columns : tuple of str
        Parameters naming a column of the ``column_role`` input (checked before Spark starts).
    predicates : tuple of str
        Parameters holding a SQL predicate over the ``input`` (checked once Spark is up).
    batch_only : bool
        Whether the function needs the whole input (a batch DataFrame): in a streaming run it
        runs once the streams have stopped, over what they wrote.
    column_role : str
        The input whose columns ``columns`` name (``input``; ``data`` for fill_frames).
    input_from : tuple of str
        The functions whose output the ``input`` must be (empty: any source or step).
    durations : dict
        Parameter -> :data:`DurationKind`: the parameters holding a duration, parsed before
        Spark starts as the function will parse them.
    check : callable or None
        Checks of the engine-free core run on a step's parameters (a dict) before Spark
        starts, beyond types and durations: raises the ``ValueError`` the function would.
    objects : tuple of str
        Parameters naming a Python object as ``"package.module:Name"`` (imported before Spark
        starts, and passed as the object; a class is instantiated).
    expressions : tuple of str
        Parameters holding SQL expressions (a list, or a dict of named ones), passed to the
        function as Columns.
    needs : tuple of (column, why) pairs
        Columns the ``column_role`` input must have whatever the parameters say, and why.
    latest_window : (str, str) or None
        The parameters giving the window a batch result ends with, (number of slots, slot
        length): the result is about the last slots up to the newest row, so a far-future
        time would make it about nothing (:func:`~windowkit.spark.check_time_outliers`).
        None: the result covers every row.
    report : str or None
        Its report section: ``"module:builder"`` under ``windowkit.report``, the builder taking
        the :class:`~windowkit.report.model.StepRun` (and the run summary as ``summary`` if it
        has that parameter); None: the report shows its rows out alone.
    sql : SqlSignature or None
        How it is also a SQL table function; None: it is not one (yet).

    Examples
    --------
    >>> f = StepFunction("windowed_count_min", "countmin", split="split_rejected",
    ...                  reason="rejected")
    >>> f.role_keys, f.report is None
    (('input',), True)
    """

    name: str
    module: str
    roles: tuple[tuple[str, str], ...] = (("df", "input"),)
    split: str | None = None
    reason: str | None = None
    from_input: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    columns: tuple[str, ...] = ()
    predicates: tuple[str, ...] = ()
    batch_only: bool = False
    column_role: str = "input"
    input_from: tuple[str, ...] = ()
    durations: Mapping[str, DurationKind] = field(default_factory=dict)
    check: Callable[[dict[str, Any]], None] | None = None
    objects: tuple[str, ...] = ()
    expressions: tuple[str, ...] = ()
    needs: tuple[tuple[str, str], ...] = ()
    latest_window: tuple[str, str] | None = None
    report: str | None = None
    sql: SqlSignature | None = None

    @property
    def role_keys(self) -> tuple[str, ...]:
        """The step-table keys that name inputs (``input``, and ``data`` for fill_frames)."""
        return tuple(key for _, key in self.roles)

    def callable(self) -> Callable[..., Any]:
        """The function itself (imports its Spark module)."""
        return getattr(importlib.import_module(f"windowkit.spark.{self.module}"), self.name)

    def report_builder(self) -> Callable[..., Any] | None:
        """Its report section's builder (imports the report module), or None."""
        return None if self.report is None else load(f"windowkit.report.{self.report}")


@dataclass(frozen=True)
class StreamExample:
    """A streaming run of a technique's subcommand over router loss readings (columns
    ``router``, ``time``, ``loss_rate``): its own arguments (input, time, key, output and the
    streaming options are the caller's) and the output folders it writes.

    Examples
    --------
    >>> StreamExample(("frames", "--when", "loss_rate > 0.003"), ("frames", "rejected")).outputs
    ('frames', 'rejected')
    """

    args: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class Technique:
    """Everything windowkit knows about one technique, found by the tools that serve it.

    Attributes
    ----------
    name : str
        Its short name (that of its descriptor module in :mod:`windowkit.techniques`).
    question : str
        The question it answers, in one line.
    core : tuple of str
        Its engine-free packages and modules under ``windowkit.core`` whose stateful classes
        register themselves (imported before state bytes are read).
    functions : tuple of StepFunction
        Its public Spark functions that a pipeline step may call.
    helpers : dict
        Its other public functions of :mod:`windowkit.spark` (name -> module under
        ``windowkit.spark``), such as the splitters of rejected rows.
    cli : tuple of str
        Its command-line modules, each with ``register(subparsers)``.
    report_example : callable or None
        Adds its steps to the report's example run
        (:func:`windowkit.report.example.example_run`): takes the run being built.
    example_functions : tuple of str
        The functions whose steps ``report_example`` adds with rows (each with its figure).
    stream_example : StreamExample or None
        A streaming run of its subcommand that a crash test kills and restarts.

    Examples
    --------
    >>> t = Technique("demo", "what?", (), (StepFunction("f", "m"),), helpers={"g": "m"})
    >>> t.spark_modules()
    {'f': 'm', 'g': 'm'}
    """

    name: str
    question: str
    core: tuple[str, ...]
    functions: tuple[StepFunction, ...]
    helpers: Mapping[str, str] = field(default_factory=dict)
    cli: tuple[str, ...] = ()
    report_example: Callable[[Any], None] | None = None
    example_functions: tuple[str, ...] = ()
    stream_example: StreamExample | None = None

    def spark_modules(self) -> dict[str, str]:
        """Each of its public Spark functions -> its module under ``windowkit.spark``."""
        return {**{f.name: f.module for f in self.functions}, **self.helpers}


__all__ = ["KEYED", "TIMED", "DurationKind", "SqlSignature", "StepFunction", "StreamExample",
           "Technique", "load"]
