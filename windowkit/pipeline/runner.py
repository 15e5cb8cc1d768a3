"""Run a checked pipeline on Spark: read its sources, run its steps in order, write everything.

Layout of the output directory (a folder per step, so a step's rows are found by its name)::

    OUTPUT/_windowkit            windowkit's mark: it may replace what it wrote here
    OUTPUT/_windowkit_parts      the parts it wrote (see windowkit.cli.ownership)
    OUTPUT/STEP/                 each step's rows (Parquet; batch=N folders when streaming)
    OUTPUT/rejected/step=STEP/   every step's rejected rows: reason and the row as JSON
    OUTPUT/report.html           the report, when the pipeline asks for one

Batch: each step's rows are written, then read back as the input of later steps and for the
report, so no step is computed twice. Streaming (``stream=True``): each step is a query of its
own with its own checkpoint, written exactly once per micro-batch; a step reading an earlier
step reads that step's output folder as a stream. Queries process what is there and stop
(``availableNow``); run again to take up new files, from the checkpoints.

A ``sql`` step runs its query with each source and earlier step it names as a temporary view
under its own name (a stream where that input is one), windowkit's SQL table functions
registered; its rows are written as a function step's are.
"""

from __future__ import annotations

import difflib
import importlib
import os
import re
import time
from typing import Any

from windowkit.cli.common import (
    InputInfo,
    Progress,
    check_output,
    claim_output,
    claim_output_part,
    claiming_split,
    format_of,
    inspect_input,
    is_remote,
    missing_column,
    named_columns,
    read_with,
)
from windowkit.cli.expressions import check_sql
from windowkit.cli.ownership import CHECKPOINT, FILE, SPARK, remove_part
from windowkit.cli.time_check import warn_time_outliers
from windowkit.pipeline.functions import FUNCTIONS, SQL_STEP, StepFunction, declaration
from windowkit.pipeline.kafka import kafka_missing
from windowkit.pipeline.progress import REJECTION_REASONS, MicroBatchProgress, StageProgress
from windowkit.pipeline.spec import (
    Pipeline,
    PipelineError,
    SourceSection,
    Step,
    inherited_params,
    key_named,
)
from windowkit.report.collect import shown_key
from windowkit.report.model import RunSummary, SourceRun, StepRun

REJECTED_DIR = "rejected"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# ------------------------------------------------------------------------ before Spark
def check_pipeline_inputs(pipeline: Pipeline, overwrite: bool = False,
                          stream: bool = False, remote: str | None = None
                          ) -> dict[str, InputInfo]:
    """What can be checked before Spark starts: each source's path, format and columns (a Kafka
    source: that Spark here loads its connector, unless it runs on a Spark Connect ``remote``),
    the columns each step names, its SQL predicates and expressions (against its input's
    columns and, where known, types), custom framings, a ``sql`` step's table functions and
    the streams they would be handed (see :func:`check_query`), and the output location (with
    ``overwrite``, a step's rows and checkpoint from a run of the other kind, batch or stream,
    are removed).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from windowkit.pipeline.spec import load_pipeline
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "r.csv").write_text("router,time,loss\\nr1,2024-01-01 00:00:00,0.1\\n")
    >>> _ = (folder / "p.toml").write_text('[pipeline]\\noutput = "out"\\n'
    ...     '[sources.r]\\npath = "r.csv"\\ntime = "time"\\nkey = "router"\\n'
    ...     '[steps.f]\\nfunction = "boundary_frames"\\ninput = "r"\\nvalue = "los"\\nx = 1.0\\n')
    >>> check_pipeline_inputs(load_pipeline(str(folder / "p.toml")))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    windowkit.pipeline.spec.PipelineError: ...p.toml:10: `value` names column 'los', which ...
    """
    infos = {name: _check_source(pipeline, name, source, remote)
             for name, source in pipeline.sources.items()}
    streams = stream_flags(pipeline, stream)
    for step in pipeline.steps:
        if step.function == SQL_STEP:
            check_query(pipeline, step, streams)
            continue
        _check_step_columns(pipeline, step, infos)
        _check_step_sql(pipeline, step, infos)
        for param in FUNCTIONS[step.function].objects:
            if param in step.params:
                _import_object(pipeline, step, param)
    _check_sources_apart(pipeline)
    try:
        check_output(pipeline.output, overwrite, parts=output_parts(pipeline))
        _check_layouts(pipeline, streaming_run(pipeline, stream), overwrite)
    except PipelineError:
        raise
    except ValueError as exc:
        raise pipeline.output_error(str(exc)) from exc
    return infos


def output_parts(pipeline: Pipeline) -> list[tuple[str, str]]:
    """What a run replaces inside the output folder, each with its kind (see
    :mod:`windowkit.cli.ownership`): the steps' folders, the rejected rows, the sinks, the
    steps' checkpoints and the report.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> p = NS(output="/o", checkpoint="/o/_checkpoints", steps=[NS(name="f")],
    ...        sinks={"c": NS(path="f_csv", format="csv")}, report="report.html")
    >>> output_parts(p)  # doctest: +NORMALIZE_WHITESPACE
    [('f', 'spark'), ('rejected', 'spark'), ('f_csv', 'spark'),
     ('_checkpoints/f', 'checkpoints'), ('report.html', 'files')]
    """
    parts = [(s.name, SPARK) for s in pipeline.steps] + [(REJECTED_DIR, SPARK)]
    parts += [(sink.path, SPARK) for sink in pipeline.sinks.values() if sink.format != "console"]
    parts += [(_inside_output(pipeline, os.path.join(pipeline.checkpoint, s.name)), CHECKPOINT)
              for s in pipeline.steps]
    if pipeline.report:
        parts.append((pipeline.report, FILE))
    return parts


def _inside_output(pipeline: Pipeline, path: str) -> str:
    return os.path.relpath(path, pipeline.output).replace(os.sep, "/")


def streaming_run(pipeline: Pipeline, stream: bool) -> bool:
    """Whether a run streams: a source is a stream (its own ``stream``, else ``--stream``)."""
    return any(stream if s.stream is None else s.stream for s in pipeline.sources.values())


def stream_flags(pipeline: Pipeline, stream: bool) -> dict[str, bool]:
    """Whether each source and step is a stream in a run (``stream``: ``--stream``): a source
    by its own ``stream``, else as the run says; a step when one of its inputs is, unless its
    function needs the whole input (it then runs over what the streams wrote).

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> p = NS(sources={"r": NS(stream=None), "t": NS(stream=False)},
    ...        steps=[NS(name="f", function="threshold_frames", inputs={"input": "r"}),
    ...               NS(name="q", function="sql", inputs={"t": "t"}),
    ...               NS(name="l", function="longest_frame", inputs={"input": "f"})])
    >>> stream_flags(p, stream=True)
    {'r': True, 't': False, 'f': True, 'q': False, 'l': False}
    """
    flags = {name: stream if source.stream is None else source.stream
             for name, source in pipeline.sources.items()}
    for step in pipeline.steps:
        flags[step.name] = not declaration(step.function).batch_only and any(
            flags[name] for name in step.inputs.values())
    return flags


def check_query(pipeline: Pipeline, step: Step, streams: dict[str, bool]) -> None:
    """What Spark would refuse of a ``sql`` step's query, before Spark starts: a windowkit table
    function it does not have, and a stream as a table function's ``TABLE`` argument (Spark
    refuses one when the query starts: it would sort the stream to partition it).

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> p = NS(where=lambda *key: "p.toml:9")
    >>> step = Step("q", "sql", {"r": "r"}, {"sql": "SELECT * FROM windowkit_threshold_frames("
    ...             "TABLE(r), time => 't', when => 'x > 1')"}, 9)
    >>> check_query(p, step, {"r": False})
    >>> check_query(p, step, {"r": True})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    windowkit.pipeline.spec.PipelineError: p.toml:9: step 'q': 'r' is a stream in this run, ...
    """
    from windowkit.pipeline.query import query_tables

    where = pipeline.where("steps", step.name, "sql")
    found = query_tables(step.params["sql"])  # it parsed when the file was read
    _check_table_functions(where, step, found.functions)
    by_name = {name.lower(): name for name in step.inputs}
    for reference in found.table_arguments:
        name = by_name.get(reference.lower(), reference)
        if streams.get(name):
            msg = (f"{where}: step {step.name!r}: {name!r} is a stream in this run, and Spark "
                   "refuses a stream as a table function's TABLE argument; read it as a batch "
                   "(`stream = false` on its source, or a run without --stream), or call the "
                   "windowkit function in a `function` step, which takes streams")
            raise PipelineError(msg)


def _check_table_functions(where: str, step: Step, functions: tuple[str, ...]) -> None:
    """Each ``windowkit_...`` table function the query calls is one of windowkit's."""
    from windowkit.spark.sql import SQL_PREFIX, sql_functions

    known = sorted(sql_functions())
    for function in functions:
        if function.lower().startswith(SQL_PREFIX) and function.lower() not in known:
            close = difflib.get_close_matches(function.lower(), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            msg = (f"{where}: step {step.name!r}: windowkit has no SQL table function "
                   f"{function!r}{hint}; accepted: {', '.join(known)}")
            raise PipelineError(msg)


def _check_layouts(pipeline: Pipeline, streaming: bool, overwrite: bool) -> None:
    """A step's folder holds one kind of run: a batch run's files, or a stream's ``batch=N``
    folders (next to its checkpoint). Mixed, readers would see rows twice or not at all."""
    for step in pipeline.steps:
        folder = os.path.join(pipeline.output, step.name)
        if is_remote(folder) or not os.path.isdir(folder):
            continue
        names = [n for n in os.listdir(folder) if not n.startswith(("_", "."))]
        streamed = any(n.startswith("batch=") for n in names)
        if not names or streamed == streaming:
            continue
        if not overwrite:
            kind, other = ("a streaming", "batch") if streamed else ("a batch", "streaming")
            msg = (f"{pipeline.where('steps', step.name)}: {folder} holds {kind} run's rows; "
                   f"a {other} run would mix them: choose another output, or pass "
                   "--overwrite to replace them")
            raise PipelineError(msg)
        for part, kind in ((step.name, SPARK), (f"{REJECTED_DIR}/step={step.name}", SPARK),
                           (_inside_output(pipeline, os.path.join(pipeline.checkpoint,
                                                                  step.name)), CHECKPOINT)):
            remove_part(pipeline.output, part, kind)


def write_targets(pipeline: Pipeline) -> dict[str, str]:
    """Every path a run writes (what it is -> the path): the steps' folders, the rejected rows,
    the checkpoints, the sinks and the report.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> p = NS(output="/o", checkpoint="/o/_checkpoints", steps=[NS(name="f")], sinks={},
    ...        report="report.html")
    >>> write_targets(p)["step 'f'"], write_targets(p)["the report"]
    ('/o/f', '/o/report.html')
    """
    targets = {f"step {s.name!r}": os.path.join(pipeline.output, s.name) for s in pipeline.steps}
    targets["the rejected rows"] = os.path.join(pipeline.output, REJECTED_DIR)
    targets["the checkpoints"] = pipeline.checkpoint
    targets.update({f"sink {name!r}": os.path.join(pipeline.output, sink.path)
                    for name, sink in pipeline.sinks.items() if sink.path})
    if pipeline.report:
        targets["the report"] = os.path.join(pipeline.output, pipeline.report)
    return targets


def _check_sources_apart(pipeline: Pipeline) -> None:
    """No source lies in what the run writes (nor holds it): writing would replace it."""
    for name, source in pipeline.sources.items():
        if is_remote(source.path) or source.format == "kafka":
            continue
        read = os.path.realpath(source.path)
        for what, target in write_targets(pipeline).items():
            written = os.path.realpath(target)
            if os.path.commonpath([read, written]) in (read, written):
                msg = (f"{pipeline.where('sources', name, 'path')}: source {name!r} "
                       f"({source.path}) overlaps where the run writes {what} ({target}); "
                       "choose another output or name")
                raise PipelineError(msg)


def _check_source(pipeline: Pipeline, name: str, source: SourceSection,
                  remote: str | None = None) -> InputInfo:
    where = pipeline.where("sources", name, "path")
    if source.format == "kafka":
        if source.schema_ is None:
            msg = (f"{pipeline.where('sources', name)}: a kafka source needs `schema`, the DDL "
                   "of its JSON messages (e.g. \"router string, time timestamp, loss double\")")
            raise PipelineError(msg)
        missing = kafka_missing(remote or pipeline.remote)
        if missing is not None:
            msg = f"{pipeline.where('sources', name, 'format')}: {missing}"
            raise PipelineError(msg)
        return _with_schema(InputInfo(source.path, "kafka", None), source.schema_)
    try:
        info = inspect_input(source.path, source.format)
    except ValueError as exc:
        msg = f"{where}: {str(exc).replace('`--input`', f'source {name!r}')}"
        raise PipelineError(msg) from exc
    if source.schema_ is not None:
        info = _with_schema(info, source.schema_)
    for attribute in ("time", "key"):
        for column in named_columns(getattr(source, attribute)):
            if info.columns is not None and column not in info.columns:
                raise _missing_column(pipeline.where("sources", name, attribute), attribute,
                                      column, info)
    return info


def _with_schema(info: InputInfo, ddl: str) -> InputInfo:
    """``info`` with the columns and types of a DDL schema string."""
    fields = _ddl_fields(ddl)
    return InputInfo(info.path, info.format, tuple(fields), fields)


def _ddl_fields(ddl: str) -> dict[str, str]:
    """The top-level columns of a DDL schema string, with their types.

    Examples
    --------
    >>> _ddl_fields("a decimal(10, 2), b struct<x: int, y: int>, `c d` string")
    {'a': 'decimal(10, 2)', 'b': 'struct<x: int, y: int>', 'c d': 'string'}
    """
    fields, depth, current = [], 0, ""
    for char in ddl:
        if char in "(<":
            depth += 1
        elif char in ")>":
            depth -= 1
        if char == "," and depth == 0:
            fields.append(current)
            current = ""
        else:
            current += char
    fields.append(current)
    found = {}
    for field in (f.strip() for f in fields if f.strip()):
        quoted = re.match(r"`([^`]*)`\s*(.*)", field)
        name, kind = quoted.groups() if quoted else (field.split(None, 1) + [""])[:2]
        found[name] = kind.strip().lower()
    return found


def _missing_column(where: str, key: str, column: str, info: InputInfo) -> PipelineError:
    return PipelineError(f"{where}: {missing_column(f'`{key}`', column, info)}")


def _check_step_columns(pipeline: Pipeline, step: Step, infos: dict[str, InputInfo]) -> None:
    function = FUNCTIONS[step.function]
    if function.input_from:
        upstream = next((s for s in pipeline.steps if s.name == step.inputs["input"]), None)
        if upstream is None or upstream.function not in function.input_from:
            what = "source" if upstream is None else f"a {upstream.function} step"
            msg = (f"{pipeline.where('steps', step.name, 'input')}: {step.function} reads the "
                   f"output of a {' or '.join(function.input_from)} step; `input` names "
                   f"{step.inputs['input']!r}, {what}")
            raise PipelineError(msg)
    info = infos.get(step.inputs.get(function.column_role, ""))
    if info is None or info.columns is None:
        return
    for column, why in function.needs:
        # whatever the parameters say: without it every row would be a null value
        if column not in info.columns:
            msg = (f"{pipeline.where('steps', step.name, function.column_role)}: "
                   f"{step.function} {why}: its input needs a `{column}` column, which "
                   f"{info.path} does not have; its columns: {', '.join(info.columns)}")
            raise PipelineError(msg)
    for param in function.columns:
        for column in named_columns(step.params.get(param)):
            if _IDENTIFIER.match(column) and column not in info.columns:
                raise _missing_column(pipeline.where("steps", step.name, param), param, column,
                                      info)


def _check_step_sql(pipeline: Pipeline, step: Step, infos: dict[str, InputInfo]) -> None:
    """A step's SQL predicates (over its ``input``) and expressions (over its ``column_role``
    input) parse and name its input's columns; a predicate is not plainly other than true or
    false. A step reading another step's output is checked for syntax alone."""
    function = FUNCTIONS[step.function]
    unknown = InputInfo("", "", None)
    checks = [(param, "input", True) for param in function.predicates]
    checks += [(param, function.column_role, False) for param in function.expressions]
    for param, role, predicate in checks:
        value = step.params.get(param)
        expressions = value.values() if isinstance(value, dict) else (
            value if isinstance(value, list) else [value])
        info = infos.get(step.inputs.get(role, "")) or unknown
        for expression in expressions:
            if not isinstance(expression, str):
                continue  # the parameter's type is the spec's to refuse
            try:
                check_sql(expression, param, info, predicate=predicate)
            except ValueError as exc:
                where = pipeline.where("steps", step.name, param)
                msg = f"{where}: {exc}"
                raise PipelineError(msg) from exc


def _import_object(pipeline: Pipeline, step: Step, param: str) -> Any:
    target = step.params.get(param, "")
    where = pipeline.where("steps", step.name, param)
    module_name, _, attribute = str(target).partition(":")
    if not module_name or not attribute:
        msg = f"{where}: `{param}` = {target!r}: give 'package.module:Name'"
        raise PipelineError(msg)
    try:
        value = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        msg = f"{where}: `{param}` = {target!r} cannot be imported ({exc})"
        raise PipelineError(msg) from exc
    return value() if isinstance(value, type) else value


# ---------------------------------------------------------------------------- the run
class PipelineRun:
    """One run of a pipeline on a SparkSession; :meth:`run` returns the :class:`RunSummary`."""

    def __init__(self, spark, pipeline: Pipeline, infos: dict[str, InputInfo],
                 stream: bool = False, progress: Progress | None = None,
                 quiet: bool = False) -> None:
        self.spark = spark
        self.quiet = quiet
        self.pipeline = pipeline
        self.infos = infos
        self.progress = progress or Progress()
        self.frames: dict[str, Any] = {}
        #: Source or step name -> whether it is a stream (see stream_flags).
        self.streams = stream_flags(pipeline, stream)
        self.streaming = streaming_run(pipeline, stream)
        self.summary = RunSummary(
            title=pipeline.name, pipeline_path=pipeline.path,
            master=spark.conf.get("spark.master", None) or "Spark Connect",
            mode="stream" if self.streaming else "batch",
            rejected_path=os.path.join(pipeline.output, REJECTED_DIR))

    def run(self) -> RunSummary:
        """Read the sources, run every step, write the sinks; return what happened."""
        claim_output(self.pipeline.output)
        for name, source in self.pipeline.sources.items():
            self.frames[name] = self._read_source(name, source)
        if any(step.function == SQL_STEP for step in self.pipeline.steps):
            from windowkit.spark import register_sql

            register_sql(self.spark)  # once: the table functions a query may call
        micro = (MicroBatchProgress(self.spark, self.progress)
                 if any(self.streams.values()) else None)
        try:
            for step in self.pipeline.steps:
                self.summary.steps.append(self._run_step(step, micro))
        finally:
            if micro is not None:
                micro.close()
        for name, sink in self.pipeline.sinks.items():
            self._write_sink(name, sink)
        # the whole command's time so far (Spark's start-up included), as its progress lines count
        self.summary.elapsed_s = time.perf_counter() - self.progress.t0
        return self.summary

    # -- sources
    def _read_source(self, name: str, source: SourceSection):
        from pyspark.errors import PySparkException

        info = self.infos[name]
        try:
            df = read_source(self.spark, source, info, self.streams[name])
        except PySparkException as exc:
            key = "schema" if source.schema_ is not None else "path"
            text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            msg = f"{self.pipeline.where('sources', name, key)}: source {name!r}: {text}"
            raise PipelineError(msg) from exc
        rows = None
        if not self.streams[name]:
            with StageProgress(self.spark, self.progress, f"reading {name}"):
                rows = df.count()
            self.progress.step(f"source {name}: {rows:,} rows ({info.format}, {source.path})")
        self.summary.sources.append(SourceRun(name, source.path, info.format, rows,
                                              source.time,
                                              shown_key(source.key).label if source.key else None))
        return df

    # -- steps
    def _run_step(self, step: Step, micro: MicroBatchProgress | None) -> StepRun:
        function = declaration(step.function)
        started = time.perf_counter()
        # a sql step's inputs are the tables its query names, each under its own name
        self.progress.step(f"step {step.name}: {step.function}(" + ", ".join(
            n if r == n else f"{r}={n}" for r, n in step.inputs.items()) + ")")
        streaming = self.streams[step.name]
        inputs = {role: self.frames[name] if streaming else self._batch_view(name)
                  for role, name in step.inputs.items()}
        if step.function == SQL_STEP:
            result = self._query(step, inputs)
        else:
            result = self._call(step, function, inputs, streaming)
        output = os.path.join(self.pipeline.output, step.name)
        if streaming:
            counts = self._stream_step(step, function, result, micro)
        else:
            written = (claim_output_part(self.pipeline.output, step.name),
                       claim_output_part(self.pipeline.output, f"{REJECTED_DIR}/step={step.name}"))
            # in a streaming run every step's folder has the stream's layout: one batch here
            where = written if not self.streaming else tuple(
                os.path.join(path, "batch=0") for path in written)
            with StageProgress(self.spark, self.progress, f"step {step.name}"):
                counts = _write_batch(result, function, *where)
        done = self._batch_view(step.name)
        self.frames[step.name] = done if not streaming else self.spark.readStream.schema(
            done.schema).option("recursiveFileLookup", "true").parquet(output)
        rejected = {r: counts.get(r, 0) for r in REJECTION_REASONS}
        rows_out = sum(n for r, n in counts.items() if r not in REJECTION_REASONS)
        elapsed = time.perf_counter() - started
        self.progress.step(f"step {step.name}: {rows_out:,} rows out, "
                           f"{sum(rejected.values()):,} rejected "
                           f"({', '.join(f'{n:,} {r}' for r, n in rejected.items())}), "
                           f"{elapsed:.1f} s")
        batch_inputs = {role: self._batch_view(name) for role, name in step.inputs.items()}
        return StepRun(name=step.name, function=step.function, params=dict(step.params),
                       inputs=batch_inputs, input_names=dict(step.inputs), result=done,
                       rejected=rejected, rows_out=rows_out, elapsed_s=elapsed, output=output,
                       inherited=inherited_params(self.pipeline, step.function, step.inputs,
                                                  step.params, streaming),
                       description=step.description)

    def _batch_view(self, name: str):
        """A batch DataFrame of a source or step (what a stream wrote, for a streamed step)."""
        if name in self.pipeline.sources:
            if not self.streams[name]:
                return self.frames[name]
            source = self.pipeline.sources[name]
            return read_source(self.spark, source, self.infos[name], stream=False)
        found = self.spark.read.parquet(os.path.join(self.pipeline.output, name))
        return found.drop("batch") if self.streaming else found

    def _call(self, step: Step, function: StepFunction, inputs: dict[str, Any],
              streaming: bool):
        from pyspark.errors import PySparkException

        frames = {param: inputs[key] for param, key in function.roles}
        if "input" in step.inputs and step.inputs["input"] in self.pipeline.sources:
            from windowkit.cli.common import check_expression

            for param in function.predicates:
                try:
                    check_expression(inputs["input"], param, step.params.get(param))
                except ValueError as exc:
                    where = self.pipeline.where("steps", step.name, param)
                    msg = f"{where}: {str(exc).replace(f'`--{param}`', f'`{param}`')}"
                    raise PipelineError(msg) from exc
        try:
            kwargs = _spark_values(self.pipeline, step, {**inherited_params(
                self.pipeline, step.function, step.inputs, step.params, streaming), **step.params})
            if not streaming:
                warn_time_outliers(frames.get("df"), step.function, kwargs, quiet=self.quiet,
                                   where=f"step {step.name!r}: ")
            return function.callable()(**frames, **kwargs)
        except (ValueError, PySparkException) as exc:
            raise self._located(step, exc) from exc

    def _query(self, step: Step, tables: dict[str, Any]):
        """A ``sql`` step's rows: its query over its tables, each a temporary view under its own
        name (the windowkit table functions registered by :meth:`run`)."""
        from pyspark.errors import PySparkException

        from windowkit.spark.columns import quoted_name

        try:
            for name, frame in tables.items():
                frame.createOrReplaceTempView(quoted_name(name))
            result = self.spark.sql(step.params["sql"])
            result.schema  # noqa: B018 - a Connect session analyses it here, as a classic one
            return result
        except PySparkException as exc:
            raise self._located(step, exc) from exc

    def _located(self, step: Step, exc: Exception) -> PipelineError:
        """``exc`` as one line at the step's key it names in backticks, else the step."""
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        where = self.pipeline.where("steps", step.name, *key_named(text, step.params))
        return PipelineError(f"{where}: step {step.name!r}: {text}")

    def _stream_step(self, step: Step, function: StepFunction, result,
                     micro: MicroBatchProgress) -> dict[str, int]:
        from windowkit.spark.sinks import write_stream_exactly_once

        totals: dict[str, int] = {}

        def on_batch(batch_id: int, counts: dict[str, int]) -> None:
            for reason, n in counts.items():
                totals[reason] = totals.get(reason, 0) + n
            micro.on_batch(batch_id, counts)

        def split(batch):
            good, bad = split_result(function, batch)
            parts = {step.name: good}
            if bad is not None:
                parts[f"{REJECTED_DIR}/step={step.name}"] = bad
            return parts

        from pyspark.errors import PySparkException

        micro.step = step.name
        checkpoint = claim_output_part(self.pipeline.output, _inside_output(
            self.pipeline, os.path.join(self.pipeline.checkpoint, step.name)), CHECKPOINT)
        try:
            query = write_stream_exactly_once(
                result.withColumn(_OUTCOME, _outcome(function, result.columns)),
                self.pipeline.output, checkpoint,
                claiming_split(self.pipeline.output, lambda b: split(b.drop(_OUTCOME))),
                on_batch, count_by=_OUTCOME)
        except PySparkException as exc:  # a query Spark refuses to start on a stream
            raise self._located(step, exc) from exc
        micro.query_id = str(query.id)
        query.awaitTermination()
        micro.flush(query)
        return totals

    # -- sinks
    def _write_sink(self, name: str, sink) -> None:
        rows = self._batch_view(sink.step)
        if sink.format == "console":
            from windowkit.pipeline.console import console_table

            self.progress.step(f"sink {name}: the first {sink.rows} rows of {sink.step}")
            print(console_table(rows, sink.rows), flush=True)
            return
        from windowkit.spark.sinks import write_frame

        path = claim_output_part(self.pipeline.output, sink.path)
        write_frame(rows, path, sink.format)
        self.progress.step(f"sink {name}: {sink.step} as {sink.format} at {path}")


_OUTCOME = "wk_outcome"


def _outcome(function: StepFunction, columns: list[str]):
    """The column saying what became of a row of a result of ``columns``: its rejection
    reason, or ``out``."""
    from pyspark.sql import functions as F

    if not _rejects(function, columns):
        return F.lit("out")
    reason = F.col(function.reason)
    return F.when(reason.isin(*REJECTION_REASONS), reason).otherwise(F.lit("out"))


def split_result(function: StepFunction, result):
    """A step's result as (output rows, rejected rows as ``reason`` and ``detail``, or None:
    nothing is rejected, or the result, a ``sql`` step's, has no rejected rows' columns).

    Examples
    --------
    >>> df = spark.createDataFrame([(1, 5.0), (None, 9.0)], "t long, x double")
    >>> from windowkit.spark import threshold_frames
    >>> good, bad = split_result(FUNCTIONS["threshold_frames"],
    ...                          threshold_frames(df, "t", "x > 1", time_unit="s"))
    >>> good.count(), bad.collect()
    (1, [Row(reason='malformed', detail='{"x":9.0}')])
    """
    from pyspark.sql import functions as F

    import windowkit.spark as wk

    if not _rejects(function, result.columns):
        return result, None
    good, bad = getattr(wk, function.split)(result)
    return good, bad.select(F.col(function.reason).alias("reason"),
                            F.col("detail").cast("string").alias("detail"))


def _rejects(function: StepFunction, columns: list[str]) -> bool:
    """Whether a result of ``columns`` holds rejected rows: its function splits them off and
    it has their columns, the reason and the ``detail`` (a ``sql`` step's query may select
    neither).

    Examples
    --------
    >>> from windowkit.pipeline.functions import QUERY
    >>> _rejects(QUERY, ["router", "start"]), _rejects(QUERY, ["start", "rejected", "detail"])
    (False, True)
    """
    return function.split is not None and {function.reason, "detail"} <= set(columns)


def _write_batch(result, function: StepFunction, output: str, rejected_at: str) -> dict[str, int]:
    result = result.persist()
    try:
        good, bad = split_result(function, result)
        good.write.mode("overwrite").parquet(output)
        counts = {"out": good.count()}
        if bad is not None:
            bad.write.mode("overwrite").parquet(rejected_at)
            counts.update({str(r["reason"]): r["count"]
                           for r in bad.groupBy("reason").count().collect()})
        return counts
    finally:
        result.unpersist()


def _spark_values(pipeline: Pipeline, step: Step, kwargs: dict[str, Any]) -> dict[str, Any]:
    """TOML values as the functions take them: SQL expressions as Columns, pairs as tuples."""
    from pyspark.sql import functions as F

    out = dict(kwargs)
    function = FUNCTIONS[step.function]
    for param in function.expressions:
        if isinstance(out.get(param), dict):
            out[param] = {name: F.expr(e) for name, e in out[param].items()}
        elif isinstance(out.get(param), list):
            out[param] = [F.expr(e) for e in out[param]]
    if isinstance(out.get("levels"), list):
        out["levels"] = [tuple(level) for level in out["levels"]]
    for param in function.objects:
        if param in out:
            out[param] = _import_object(pipeline, step, param)
    return out


def read_source(spark, source: SourceSection, info: InputInfo, stream: bool):
    """A source as a batch or streaming DataFrame (CSV and JSON read permissively, so that a
    malformed line is kept in ``_corrupt_record`` and set aside by the step, not lost)."""
    if info.format == "kafka":
        return _read_kafka(spark, source, stream)
    reader = spark.readStream if stream else spark.read
    if stream:
        reader = reader.option("maxFilesPerTrigger", source.max_files_per_trigger)
    schema = source.schema_
    if schema is None and stream:
        schema = read_source(spark, source, info, stream=False).schema
    if schema is not None:
        reader = reader.schema(schema)  # read_with then infers nothing
    for key, value in source.options.items():
        reader = reader.option(key, str(value).lower() if isinstance(value, bool) else value)
    path = source.path
    if stream and not is_remote(path) and os.path.isfile(path):
        # a file stream reads a folder or a glob: a glob matching this file only, so that
        # Spark does not list (and partition-discover) the rest of the file's folder
        folder, name = os.path.split(path)
        escaped = re.sub(r"([*?\[\]{}])", r"[\1]", name[:-1])
        path = os.path.join(folder, f"{escaped}[{name[-1]}]")
    return read_with(reader, InputInfo(path, info.format or format_of(source.path), None),
                     None)


def _read_kafka(spark, source: SourceSection, stream: bool):
    """Kafka (needs the spark-sql-kafka connector on the classpath): ``path`` is the topic,
    ``options`` the consumer's (``kafka.bootstrap.servers`` at least); each message's value is
    JSON of ``schema``."""
    from pyspark.sql import functions as F

    reader = (spark.readStream if stream else spark.read).format("kafka")
    options = {"subscribe": source.path, **{k: str(v) for k, v in source.options.items()}}
    raw = reader.options(**options).load()
    parsed = F.from_json(F.col("value").cast("string"), source.schema_)
    return raw.select(parsed.alias("wk_value")).select("wk_value.*")
