"""A pipeline file: what to read, what to compute, where to write it; checked before Spark starts.

The file is TOML (read with the standard library's ``tomllib``)::

    [pipeline]
    name = "network day"
    output = "out/network-day"     # inside this file's folder (--output for elsewhere)

    [sources.routers]
    path = "data/routers.parquet"
    time = "time"
    key = "router"

    [steps.loss_frames]
    function = "threshold_frames"
    input = "routers"
    when = "loss_rate > 0.003"
    min_duration = "3 rows"

    [steps.long_losses]
    sql = "SELECT * FROM loss_frames WHERE `end` - start > INTERVAL 2 MINUTES"

A step calls a windowkit ``function`` or runs a Spark SQL query (``sql``), which reads the
sources and earlier steps by name and may call windowkit's SQL table functions.

Every mistake found here is a :class:`PipelineError` (a ``ValueError``) whose one line gives
the file, the line and what is accepted there. Unknown keys, types and missing parameters are
checked by pydantic models (of the sections below, and of each function's own signature).
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from windowkit.core.durations import TimeUnit
from windowkit.pipeline.functions import (
    FUNCTIONS,
    SQL_STEP,
    SQL_STEP_KEYS,
    STEP_KEYS,
    accepted_parameters,
    declaration,
    parameter_model,
)
from windowkit.pipeline.locate import KeyLines
from windowkit.technique import DurationKind

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]*$")
RESERVED_NAMES = ("rejected", "_checkpoints", "report")
#: The checkpoints' folder inside the output unless ``[pipeline] checkpoint`` names another.
CHECKPOINTS = RESERVED_NAMES[1]


class PipelineError(ValueError):
    """A mistake in a pipeline file, located: ``FILE:LINE: what is wrong; what is accepted``."""


class _Strict(BaseModel):
    # strict: `stream = "yes"` is a mistake, not True
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


class PipelineSection(_Strict):
    """``[pipeline]``: the run as a whole."""

    name: str = "windowkit pipeline"
    output: str
    report: str | None = "report.html"
    master: str | None = None
    remote: str | None = None
    checkpoint: str | None = None


class SourceSection(_Strict):
    """``[sources.NAME]``: one input, read as a batch or (``--stream``) as a stream.

    ``stream = false`` makes it a stored table, read as a batch even in a streaming run (the
    filler of ``fill_frames``, say); ``stream = true`` makes it a stream in every run.
    """

    path: str
    format: Literal["csv", "json", "parquet", "kafka"] | None = None
    time: str | None = None
    time_unit: TimeUnit | None = None
    key: str | list[str] | None = None
    schema_: str | None = Field(default=None, alias="schema")
    stream: bool | None = None
    watermark: str = "1 minute"
    max_files_per_trigger: int = Field(default=1, ge=1)
    options: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @field_validator("watermark")
    @classmethod
    def _watermark(cls, value: str) -> str:
        return _duration(value, "watermark", "time")


class SinkSection(_Strict):
    """``[sinks.NAME]``: a copy of one step's rows as CSV or Parquet, or shown on the console."""

    step: str
    format: Literal["parquet", "csv", "console"] = "parquet"
    path: str | None = None
    rows: int = Field(default=20, ge=1)


class _Document(_Strict):
    pipeline: PipelineSection
    sources: dict[str, SourceSection] = Field(min_length=1)
    steps: dict[str, dict[str, Any]] = Field(min_length=1)
    sinks: dict[str, SinkSection] = Field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """One validated step: its function, its inputs (role key -> name) and its parameters.

    A ``sql`` step's function is ``"sql"``, its one parameter ``sql`` (the query) and its
    inputs the sources and earlier steps the query names (each name -> itself).
    """

    name: str
    function: str
    inputs: dict[str, str]
    params: dict[str, Any]
    line: int | None
    description: str = ""


@dataclass(frozen=True)
class Pipeline:
    """A validated pipeline file, paths resolved against the file's folder.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "r.csv").write_text("router,time,loss\\n")
    >>> _ = (folder / "p.toml").write_text('''
    ... [pipeline]
    ... output = "out"
    ... [sources.r]
    ... path = "r.csv"
    ... time = "time"
    ... key = "router"
    ... [steps.frames]
    ... function = "threshold_frames"
    ... input = "r"
    ... when = "loss > 0.1"
    ... ''')
    >>> p = load_pipeline(str(folder / "p.toml"))
    >>> p.steps[0].function, p.steps[0].inputs, p.output == str(folder / "out")
    ('threshold_frames', {'input': 'r'}, True)
    """

    path: str
    name: str
    output: str
    report: str | None
    master: str | None
    checkpoint: str
    sources: dict[str, SourceSection]
    steps: tuple[Step, ...]
    sinks: dict[str, SinkSection]
    lines: KeyLines
    #: A Spark Connect URL to run on instead of ``master``.
    remote: str | None = None
    #: Whether ``output`` is the command line's ``--output`` rather than the file's.
    output_given: bool = False

    def where(self, *key: str | int) -> str:
        """``FILE:LINE`` of a key of the file (``FILE`` when it cannot be found)."""
        line = self.lines.line_of(key)
        return f"{self.path}:{line}" if line else self.path

    def output_error(self, message: str) -> PipelineError:
        """A mistake about the output folder, located at ``--output`` or the file's key.

        Examples
        --------
        >>> from types import SimpleNamespace as NS
        >>> p = NS(path="p.toml", output_given=False, lines=KeyLines('[pipeline]\\noutput = "o"'))
        >>> str(Pipeline.output_error(p, "`--output` o is not writable"))
        'p.toml:2: `output` o is not writable'
        """
        if self.output_given:
            return PipelineError(f"{self.path}: {message}")
        line = self.lines.line_of(("pipeline", "output"))
        where = f"{self.path}:{line}" if line else self.path
        return PipelineError(f"{where}: {message.replace('`--output`', '`output`')}")


def load_pipeline(path: str, output: str | None = None) -> Pipeline:
    """Read and check a pipeline file; raise :class:`PipelineError` on the first mistake.

    ``output`` (relative to the working directory) replaces the file's ``[pipeline] output``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "p.toml"
    >>> _ = f.write_text('[pipeline]\\noutput = "o"\\nouptut = "x"\\n')
    >>> load_pipeline(str(f))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    windowkit.pipeline.spec.PipelineError: ...p.toml:3: [pipeline] has no key 'ouptut' ...
    """
    text = _read(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = re.search(r"\(at line (\d+), column (\d+)\)", message)
        where = f"{path}:{found.group(1)}" if found else path
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", message)
        msg = f"{where}: not valid TOML: {message}"
        raise PipelineError(msg) from exc
    lines = KeyLines(text)
    try:
        document = _Document.model_validate(raw)
    except ValidationError as exc:
        raise _located(exc, path, lines, raw) from exc
    folder = os.path.dirname(os.path.abspath(path))
    section = document.pipeline
    sources = {name: source.model_copy(update={"path": _resolve(folder, source.path)})
               for name, source in document.sources.items()}
    pipeline = Pipeline(
        path=path, name=section.name, output=os.path.abspath(output or folder),
        report=section.report, master=section.master, remote=section.remote,
        checkpoint="", sources=sources, steps=(), sinks=dict(document.sinks), lines=lines,
        output_given=output is not None)
    out = os.path.abspath(output) if output else _confined_output(pipeline, folder,
                                                                   section.output)
    master, remote = _spark_target(pipeline, section)
    pipeline = Pipeline(**{**pipeline.__dict__, "output": out, "master": master,
                           "remote": remote,
                           # a checkpoint belongs to one output: --output takes it along
                           "checkpoint": os.path.join(out, section.checkpoint or CHECKPOINTS)})
    _check_names(pipeline, document)
    steps = _steps(pipeline, document.steps)
    pipeline = Pipeline(**{**pipeline.__dict__, "steps": steps})
    _check_sinks(pipeline)
    _check_inside_output(pipeline, section.checkpoint)
    return pipeline


def _spark_target(pipeline: Pipeline, section: PipelineSection) -> tuple[str | None, str | None]:
    from windowkit.cli.spark_urls import spark_target

    try:
        return spark_target(section.master, section.remote, ("`master`", "`remote`"))
    except ValueError as exc:
        key = key_named(str(exc), {"master": 0, "remote": 0}) or ["master"]
        msg = f"{pipeline.where('pipeline', *key)}: {exc}"
        raise PipelineError(msg) from exc


def confined_path(base: str, path: str, may_be_base: bool = False) -> str | None:
    """``path`` (relative) joined to ``base`` if it lies inside ``base`` once symbolic links are
    followed; None if it leads out: absolute, a URL, ``..`` out of it, or a link to elsewhere.

    Examples
    --------
    >>> import tempfile
    >>> base = tempfile.mkdtemp()
    >>> confined_path(base, "sub/report.html") == os.path.join(base, "sub", "report.html")
    True
    >>> confined_path(base, "../ck"), confined_path(base, "/ck"), confined_path(base, ".")
    (None, None, None)
    >>> os.symlink(tempfile.gettempdir(), os.path.join(base, "out"))
    >>> confined_path(base, "out/ck")
    """
    if not path or os.path.isabs(path) or "://" in path:
        return None
    joined = os.path.normpath(os.path.join(base, path))
    real_base, real = os.path.realpath(base), os.path.realpath(joined)
    if os.path.commonpath([real_base, real]) != real_base:
        return None
    return joined if may_be_base or real != real_base else None


def _confined_output(pipeline: Pipeline, folder: str, output: str) -> str:
    """The file's ``output``, inside the file's folder: a file from elsewhere never writes out
    of its folder (``--output`` chooses any place)."""
    found = confined_path(folder, output, may_be_base=True)
    if found is None:
        msg = (f"{pipeline.where('pipeline', 'output')}: `output` {output!r} must be a relative "
               f"path inside the pipeline file's folder {folder} (e.g. \"out\"); pass --output "
               "to write elsewhere")
        raise PipelineError(msg)
    return found


def _read(path: str) -> str:
    if not os.path.isfile(path):
        what = "is a directory" if os.path.isdir(path) else "does not exist"
        msg = f"pipeline file {path} {what}"
        raise PipelineError(msg)
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        msg = f"{path}:{line}: not UTF-8 text (byte {data[exc.start]:#04x}); save it as UTF-8"
        raise PipelineError(msg) from exc


def _resolve(folder: str, path: str) -> str:
    if "://" in path or os.path.isabs(path):
        return path
    return os.path.normpath(os.path.join(folder, path))


# ------------------------------------------------------------------------------- messages
_SECTION_KEYS = {"pipeline": PipelineSection, "sources": SourceSection, "sinks": SinkSection}


def _located(exc: ValidationError, path: str, lines: KeyLines, raw: dict) -> PipelineError:
    # an unknown key says more than the missing one it may be a typo of
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    error = errors[0]
    loc = _real_keys(tuple(error["loc"]), raw, missing=error["type"] == "missing")
    if len(loc) == 1 and isinstance(raw.get(loc[0]), list) and loc[0] in ("sources", "steps",
                                                                           "sinks"):
        return PipelineError(f"{path}:{lines.line_of((loc[0], 0))}: write one [{loc[0]}.NAME] "
                             f"table per entry, not [[{loc[0]}]]")
    where = f"{path}:{lines.line_of(loc)}" if lines.line_of(loc) else path
    return PipelineError(f"{where}: {_describe(error, loc, raw)}")


def _real_keys(loc: tuple, raw: Any, missing: bool) -> tuple:
    """``loc`` up to the keys the file has (pydantic adds the union member it tried), and the
    key the error says is ``missing``."""
    kept = []
    for part in loc:
        if isinstance(raw, dict) and part in raw or isinstance(raw, list) and isinstance(
                part, int) and part < len(raw):
            kept.append(part)
            raw = raw[part]
        else:
            if missing and isinstance(raw, dict):
                kept.append(part)
            break
    return tuple(kept)


def _table(loc: tuple) -> str:
    if not loc:
        return "the file"
    if loc[0] in ("sources", "sinks", "steps") and len(loc) > 1:
        return f"[{loc[0]}.{loc[1]}]"
    return f"[{loc[0]}]"


def _describe(error: dict, loc: tuple, raw: dict) -> str:
    kind, key = error["type"], loc[-1] if loc else ""
    if kind == "extra_forbidden":
        parent = loc[:-1]
        model = (_Document if len(parent) == 0 else
                 _SECTION_KEYS.get(parent[0]) if len(parent) in (1, 2) else None)
        accepted = sorted(f.alias or n for n, f in model.model_fields.items()) if model else []
        return f"{_table(parent)} has no key {key!r}{_close(str(key), accepted)}; " \
               f"accepted: {', '.join(accepted)}"
    if kind == "missing":
        if len(loc) == 1:
            return f"the file needs a [{key}] section"
        return f"{_table(loc[:-1])} needs `{key}`"
    if kind in ("too_short",) and len(loc) == 1:
        return f"the file needs at least one [{key}.NAME] table"
    value = _value_at(raw, loc)
    text = re.sub(r" or instance of \w+", "", error["msg"])
    return f"`{key}` = {value!r} in {_table(loc[:-1] or loc)}: {text}"


def _value_at(raw: Any, loc: tuple) -> Any:
    for part in loc:
        try:
            raw = raw[part]
        except (KeyError, IndexError, TypeError):
            return None
    return raw


def _close(word: str, accepted: list[str]) -> str:
    close = difflib.get_close_matches(word, accepted, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _duration(value: str | int, name: str, kind: DurationKind) -> str:
    from windowkit.core.durations import Duration

    if kind == "time or zero" and isinstance(value, str) and \
            value.strip().split(" ")[0] in ("0", "0.0"):
        return value  # "0 seconds": no reach, as fill_frames takes it
    Duration.parse(value, name, allow_rows=kind == "time or rows")
    return value


# --------------------------------------------------------------------------------- checks
def _check_names(pipeline: Pipeline, document: _Document) -> None:
    for kind, names in (("sources", document.sources), ("steps", document.steps),
                        ("sinks", document.sinks)):
        for name in names:
            if not _NAME.match(name) or name in RESERVED_NAMES:
                msg = (f"{pipeline.where(kind, name)}: [{kind}.{name}]: a name is a letter then "
                       f"letters, digits, _ or -, and not {', '.join(RESERVED_NAMES)}")
                raise PipelineError(msg)
    both = set(document.sources) & set(document.steps)
    if both:
        name = sorted(both)[0]
        msg = (f"{pipeline.where('steps', name)}: step {name!r} has the name of a source; "
               "an input must name one thing")
        raise PipelineError(msg)


def _steps(pipeline: Pipeline, tables: dict[str, dict[str, Any]]) -> tuple[Step, ...]:
    steps: list[Step] = []
    for name, table in tables.items():
        steps.append(_step(pipeline, name, table, [s.name for s in steps], list(tables)))
    return tuple(steps)


def _step(pipeline: Pipeline, name: str, table: dict[str, Any], earlier: list[str],
          every_step: list[str]) -> Step:
    where = pipeline.where("steps", name)
    if not isinstance(table, dict):
        msg = f"{where}: [steps.{name}] must be a table of the step's function and parameters"
        raise PipelineError(msg)
    if "sql" in table:
        return _query_step(pipeline, name, table, earlier, every_step)
    function_name = table.get("function")
    if function_name is not None and not isinstance(function_name, str):
        msg = (f"{pipeline.where('steps', name, 'function')}: `function` is the name of one "
               f"function; accepted: {', '.join(FUNCTIONS)}")
        raise PipelineError(msg)
    if function_name is None:
        msg = (f"{where}: [steps.{name}] needs `function` (accepted: {', '.join(FUNCTIONS)}) "
               "or `sql`, a Spark SQL query")
        raise PipelineError(msg)
    if function_name not in FUNCTIONS:
        msg = (f"{pipeline.where('steps', name, 'function')}: unknown function "
               f"{function_name!r}{_close(str(function_name), list(FUNCTIONS))}; accepted: "
               f"{', '.join(FUNCTIONS)}")
        raise PipelineError(msg)
    function = FUNCTIONS[function_name]
    inputs = {}
    for role in function.role_keys:
        inputs[role] = _input(pipeline, name, role, table.get(role), earlier, every_step)
    given = {k: v for k, v in table.items() if k not in (*STEP_KEYS, *function.role_keys)}
    params = {**inherited_params(pipeline, function_name, inputs, given, streaming=True),
              **given}
    _check_params(pipeline, name, function_name, params, given)
    return Step(name=name, function=function_name, inputs=inputs, params=given,
                line=pipeline.lines.line_of(("steps", name)),
                description=str(table.get("description", "")))


def _query_step(pipeline: Pipeline, name: str, table: dict[str, Any], earlier: list[str],
                every_step: list[str]) -> Step:
    """A ``sql`` step: one query parsed, each table it names a source or an earlier step."""
    from windowkit.pipeline.query import query_tables

    where = pipeline.where("steps", name, "sql")
    if "function" in table:
        msg = (f"{pipeline.where('steps', name, 'function')}: [steps.{name}] has both "
               "`function` and `sql`; a step calls a function or runs a query, not both")
        raise PipelineError(msg)
    other = [key for key in table if key not in SQL_STEP_KEYS]
    if other:
        msg = (f"{pipeline.where('steps', name, other[0])}: [steps.{name}] is a sql step, "
               f"which has no key {other[0]!r} (its query names its tables); accepted: "
               f"{', '.join(SQL_STEP_KEYS)}")
        raise PipelineError(msg)
    sql = table["sql"]
    if not isinstance(sql, str):
        msg = f"{where}: `sql` is one Spark SQL query, as a string; got {sql!r}"
        raise PipelineError(msg)
    try:
        found = query_tables(sql)
    except ValueError as exc:
        msg = f"{where}: [steps.{name}] `sql`: {exc}"
        raise PipelineError(msg) from exc
    readable = [*pipeline.sources, *earlier]
    inputs = {}
    for reference in found.tables:
        known = _table_named(reference, readable)
        if known is not None:
            inputs[known] = known
            continue
        step = _table_named(reference, every_step)
        why = (", this step itself" if step == name else
               ", a later step (steps run in the order of the file)" if step else
               f", which is neither a source nor an earlier step{_close(reference, readable)}")
        msg = (f"{where}: [steps.{name}] `sql` reads table {reference!r}{why}; accepted: "
               f"{', '.join(readable)}")
        raise PipelineError(msg)
    return Step(name=name, function=SQL_STEP, inputs=inputs, params={"sql": sql},
                line=pipeline.lines.line_of(("steps", name)),
                description=str(table.get("description", "")))


def _table_named(reference: str, names: list[str]) -> str | None:
    """The name of ``names`` that a query's table ``reference`` is (Spark resolves a view's name
    without regard to case), or None."""
    return next((n for n in names if n.lower() == reference.lower()), None)


def _input(pipeline: Pipeline, step: str, role: str, value: Any, earlier: list[str],
           every_step: list[str]) -> str:
    where = pipeline.where("steps", step, role)
    known = [*pipeline.sources, *earlier]
    if value is None:
        msg = (f"{pipeline.where('steps', step)}: [steps.{step}] needs `{role}`, the source or "
               f"earlier step it reads; accepted: {', '.join(known)}")
        raise PipelineError(msg)
    if value not in known:
        later = (" (a later step: steps run in the order of the file)"
                 if value in every_step else "")
        msg = (f"{where}: `{role}` names {value!r}, which is neither a source nor an earlier "
               f"step{later}{_close(str(value), known)}; accepted: {', '.join(known)}")
        raise PipelineError(msg)
    return value


def inherited_params(pipeline: Pipeline, function: str, inputs: dict[str, str],
                     given: dict[str, Any], streaming: bool) -> dict[str, Any]:
    """The parameters a step leaves out that its input sources give (``time``, ``by`` from
    the key, ``time_unit``; the watermark delay as ``late`` only on a stream). A step's output
    as input gives none: its columns are the function's, not a source's; nor does a ``sql``
    step's query, which names its columns itself.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> p = NS(sources={"r": NS(time="t", key="router", time_unit=None, watermark="2 min")})
    >>> inherited_params(p, "threshold_frames", {"input": "r"}, {"by": "x"}, streaming=False)
    {'time': 't'}
    """
    inherited = {}
    for param, (role, attribute) in declaration(function).from_input.items():
        if param in given or (attribute == "watermark" and not streaming):
            continue
        source = pipeline.sources.get(inputs.get(role, ""))
        value = None if source is None else getattr(source, attribute)
        if value is not None and param in parameter_model(function).model_fields:
            inherited[param] = value
    return inherited


def key_named(message: str, keys: Any) -> list[str]:
    """The key of ``keys`` that an error message names in backticks, as a one-item list (for
    :meth:`Pipeline.where`), or an empty one.

    Examples
    --------
    >>> key_named("`alpha` must be in (0, 1]; got 2", {"alpha": 2}), key_named("no", {})
    (['alpha'], [])
    """
    named = re.search(r"`(\w+)`", message)
    return [named.group(1)] if named and named.group(1) in keys else []


def _check_params(pipeline: Pipeline, step: str, function: str, params: dict,
                  given: dict) -> None:
    model = parameter_model(function)
    try:
        model.model_validate(params)
    except ValidationError as exc:
        error = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")[0]
        key = error["loc"][0] if error["loc"] else ""
        if error["type"] == "missing" and len(error["loc"]) > 1:
            error = {**error, "type": "nested", "msg": "an entry lacks a value"}
        accepted = accepted_parameters(function)
        if error["type"] == "extra_forbidden":
            msg = (f"{pipeline.where('steps', step, key)}: {function} has no parameter "
                   f"{key!r}{_close(str(key), accepted)}; accepted: "
                   f"{', '.join([*accepted, *FUNCTIONS[function].role_keys, *STEP_KEYS])}")
        elif error["type"] == "missing":
            msg = (f"{pipeline.where('steps', step)}: [steps.{step}] ({function}) needs "
                   f"`{key}`")
            if key in FUNCTIONS[function].from_input:
                msg += " (its input source gives none)"
        else:
            msg = (f"{pipeline.where('steps', step, key)}: `{key}` = {params.get(key)!r} for "
                   f"{function}: {error['msg']}")
        raise PipelineError(msg) from exc
    durations = FUNCTIONS[function].durations
    for key, value in params.items():
        if key in durations and isinstance(value, str):
            try:
                _duration(value, key, durations[key])
            except ValueError as exc:
                where = pipeline.where("steps", step, key) if key in given else \
                    pipeline.where("steps", step)
                msg = f"{where}: {exc}"
                raise PipelineError(msg) from exc
    check = FUNCTIONS[function].check
    if check is not None:
        try:
            check(params)
        except (ValueError, TypeError) as exc:
            where = pipeline.where("steps", step, *key_named(str(exc), given))
            msg = f"{where}: [steps.{step}] ({function}): {exc}"
            raise PipelineError(msg) from exc


def _check_inside_output(pipeline: Pipeline, checkpoint: str | None) -> None:
    """The report, the sinks and the checkpoints are written inside the output folder, beside
    the steps' folders and never over them: a path out of it could replace a user's files."""
    from windowkit.cli.ownership import MANIFEST, OUTPUT_MARK

    taken = {s.name: f"step {s.name!r}" for s in pipeline.steps}
    taken.update({name: "windowkit's own folder" for name in RESERVED_NAMES[:2]})
    taken.update({name: "windowkit's own file" for name in (OUTPUT_MARK, MANIFEST)})
    targets = [(("pipeline", "report"), "report", pipeline.report)] if pipeline.report else []
    if checkpoint is not None and os.path.normpath(checkpoint) != CHECKPOINTS:
        targets.append((("pipeline", "checkpoint"), "checkpoint", checkpoint))
    targets += [(("sinks", name, "path"), f"[sinks.{name}] path", sink.path)
                for name, sink in pipeline.sinks.items() if sink.format != "console"]
    for key, what, path in targets:
        if confined_path(pipeline.output, path) is None:
            msg = (f"{pipeline.where(*key)}: {what} {path!r} must be a relative path inside the "
                   "output folder (a file or folder name, e.g. \"report.html\")")
            raise PipelineError(msg)
        parts = os.path.normpath(path).split(os.sep)
        if parts[0] in taken:
            msg = (f"{pipeline.where(*key)}: {what} {path!r} would be written over "
                   f"{taken[parts[0]]}; choose another name")
            raise PipelineError(msg)
        taken[parts[0]] = what


def _check_sinks(pipeline: Pipeline) -> None:
    steps = [s.name for s in pipeline.steps]
    for name, sink in pipeline.sinks.items():
        if sink.step not in steps:
            msg = (f"{pipeline.where('sinks', name, 'step')}: [sinks.{name}] names step "
                   f"{sink.step!r}{_close(sink.step, steps)}; accepted: {', '.join(steps)}")
            raise PipelineError(msg)
        if sink.format != "console" and not sink.path:
            msg = f"{pipeline.where('sinks', name)}: [sinks.{name}] needs `path` for " \
                  f"{sink.format}"
            raise PipelineError(msg)
