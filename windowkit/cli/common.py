"""Options and checks shared by the subcommands: input, output, progress, exactly-once sinks.

What can be checked without Spark is checked here before it starts (10-20 s): the input path, its
format (from the file extension when ``--format`` is not given, ``.csv.gz`` included), that it
holds data, the columns the options name (from a CSV header, JSON lines or a Parquet footer), and
the output location. Every check raises ``ValueError`` with one line; the command prints it and
exits with code 2.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import gzip
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

from windowkit.cli.ownership import MANIFEST, OUTPUT_MARK, SPARK, check_part, claim_part
from windowkit.cli.spark_urls import DEFAULT_MASTER
from windowkit.core.durations import TIME_UNITS
from windowkit.spark.sinks import OUTPUT_FORMATS

FORMATS = ("csv", "json", "parquet")
_EXTENSIONS = {".csv": "csv", ".tsv": None, ".json": "json", ".jsonl": "json",
               ".ndjson": "json", ".parquet": "parquet", ".pq": "parquet"}
_COMPRESSIONS = (".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst")


def add_io_arguments(parser: argparse.ArgumentParser, stream: bool = True) -> None:
    """Add the input, output, Spark and streaming options every subcommand shares.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_io_arguments(p)
    >>> args = p.parse_args(["--input", "in.csv.gz", "--output", "out"])
    >>> args.format is None, args.overwrite, args.time_unit, args.output_format
    (True, False, None, 'parquet')
    """
    parser.add_argument("--input", required=True, help="input file or directory")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="input format (default: from the file extension)")
    parser.add_argument("--output", required=True,
                        help="output directory; must be new, empty or windowkit's own")
    add_output_format_argument(parser)
    parser.add_argument("--overwrite", action="store_true",
                        help="allow an output directory that holds files windowkit did not write")
    parser.add_argument("--time-unit", choices=TIME_UNITS, default=None,
                        help="unit of an integer time column (required for one)")
    add_spark_arguments(parser)
    parser.add_argument("--verbose", action="store_true",
                        help="show Spark's log and full tracebacks")
    if stream:
        parser.add_argument("--stream", action="store_true",
                            help="run as Structured Streaming over the files in --input")
        parser.add_argument("--checkpoint", default=None,
                            help="checkpoint directory (required with --stream)")
        parser.add_argument("--max-files-per-trigger", type=int, default=1,
                            help="files per micro-batch with --stream")
        parser.add_argument("--late", default="1 minute",
                            help="how late a row may arrive with --stream (watermark delay)")


def add_output_format_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--output-format``: what every subcommand writes its results in.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_output_format_argument(p)
    >>> p.parse_args([]).output_format, p.parse_args(["--output-format", "csv"]).output_format
    ('parquet', 'csv')
    """
    parser.add_argument("--output-format", choices=OUTPUT_FORMATS, default="parquet",
                        help="results as Parquet folders (default; times as timestamps) or "
                             "CSV folders with a header line")


def add_spark_arguments(parser: argparse.ArgumentParser, default_master: str = DEFAULT_MASTER,
                        when: str = "") -> None:
    """Add ``--master`` and ``--remote``: where Spark runs (checked by
    :func:`windowkit.cli.spark_urls.spark_target` before it starts).

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_spark_arguments(p)
    >>> vars(p.parse_args(["--remote", "sc://localhost:15002"]))
    {'master': None, 'remote': 'sc://localhost:15002'}
    """
    parser.add_argument("--master", default=None,
                        help=f"{when}Spark master URL: local[N], spark://HOST:PORT, yarn, "
                             f"k8s://URL (default: {default_master})")
    parser.add_argument("--remote", default=None, metavar="URL",
                        help=f"{when}Spark Connect server: sc://HOST[:PORT], or local[N] for a "
                             "local one; instead of --master")


# ------------------------------------------------------------------------------------ input
@dataclass(frozen=True)
class InputInfo:
    """What was learnt of ``--input`` before Spark starts.

    ``columns`` is None where they cannot be read without Spark (a remote path); ``types``
    (column -> type name) where the input's schema says them (Parquet, a DDL schema), else
    None.
    """

    path: str
    format: str
    columns: tuple[str, ...] | None
    types: Mapping[str, str] | None = None


def is_remote(path: str) -> bool:
    """Whether ``path`` names a file system other than the local one (``hdfs://``, ``s3a://``).

    Examples
    --------
    >>> is_remote("hdfs://nn/data"), is_remote("data/x.csv"), is_remote("file:///tmp/x")
    (True, False, False)
    """
    scheme = urlparse(path).scheme
    return len(scheme) > 1 and scheme != "file"


def _local(path: str) -> str:
    return urlparse(path).path if path.startswith("file:") else path


def format_of(name: str) -> str | None:
    """The input format a file name's extension says, compression suffixes skipped.

    Examples
    --------
    >>> format_of("a.csv.gz"), format_of("part-0.snappy.parquet"), format_of("x.txt")
    ('csv', 'parquet', None)
    """
    stem = name.lower()
    while stem.endswith(_COMPRESSIONS):
        stem = stem[: stem.rindex(".")]
    return _EXTENSIONS.get(os.path.splitext(stem)[1])


def data_files(path: str) -> list[str]:
    """The data files Spark would read under ``path`` (hidden and ``_`` files skipped)."""
    if os.path.isfile(path):
        return [path]
    found = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        found += [os.path.join(root, f) for f in sorted(files) if not f.startswith((".", "_"))]
    return found


def inspect_input(path: str, fmt: str | None, option: str = "--input") -> InputInfo:
    """Check an input path (given as ``option``) and its format before Spark starts; read its
    column names (and, from a Parquet footer, their types).

    Examples
    --------
    >>> inspect_input("/no/such/dir", None)
    Traceback (most recent call last):
    ...
    ValueError: `--input` /no/such/dir does not exist
    """
    named = f"`{option}` {path}"
    if is_remote(path):
        if fmt is None:
            fmt = format_of(path)
        if fmt is None:
            msg = f"`--format` is needed for {path} (csv, json or parquet)"
            raise ValueError(msg)
        return InputInfo(path, fmt, None)
    local = _local(path)
    if not os.path.exists(local):
        msg = f"{named} does not exist"
        raise ValueError(msg)
    files = data_files(local)
    if not files:
        msg = f"{named} holds no data files"
        raise ValueError(msg)
    if fmt is None:
        found = {format_of(os.path.basename(f)) for f in files}
        if len(found) != 1 or None in found:
            names = ", ".join(sorted({os.path.basename(f) for f in files})[:3])
            msg = (f"cannot tell the format of {named} from its file names ({names}); "
                   f"pass `--format` csv, json or parquet")
            raise ValueError(msg)
        fmt = found.pop()
    nonempty = [f for f in files if os.path.getsize(f) > 0]
    if not nonempty:
        msg = f"{named} is empty"
        raise ValueError(msg)
    try:
        columns, types = _columns(nonempty[0], fmt)
    except ValueError as exc:
        msg = f"{named} {exc}"
        raise ValueError(msg) from exc
    return InputInfo(path, fmt, columns, types)


def _columns(file: str, fmt: str) -> tuple[tuple[str, ...], dict[str, str] | None]:
    """The columns of a data file (and their types, from a Parquet footer); ``ValueError``
    saying what is wrong with the file, to follow its name."""
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            schema = pq.read_schema(file)
            return tuple(schema.names), {f.name: str(f.type) for f in schema}
        with _open_text(file) as handle:
            if fmt == "csv":
                header = next(csv.reader(handle), None)
                if header is None:
                    msg = "is empty"
                    raise ValueError(msg)
                return tuple(h.strip() for h in header), None
            names: dict[str, None] = {}
            for _, line in zip(range(100), handle, strict=False):
                if line.strip():
                    record = json.loads(line)
                    if isinstance(record, dict):
                        names.update(dict.fromkeys(record))
            return tuple(names), None
    except ValueError as exc:
        if str(exc) == "is empty":
            raise
        msg = f"is not valid {fmt.upper()} ({_first_line(exc)}); check `--format`"
        raise ValueError(msg) from exc
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"is not readable as {fmt.upper()} ({_first_line(exc)}); check `--format`"
        raise ValueError(msg) from exc
    except Exception as exc:  # pyarrow's own errors for a file that is not Parquet
        msg = f"is not valid {fmt.upper()} ({_first_line(exc)}); check `--format`"
        raise ValueError(msg) from exc


def _open_text(file: str) -> io.TextIOBase:
    if file.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(file), encoding="utf-8")
    return open(file, encoding="utf-8", newline="")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def add_by_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """Add ``--by``: a key column, or several separated by commas (a composite key).

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_by_argument(p, "key column")
    >>> p.parse_args(["--by", "site,router"]).by, p.parse_args(["--by", "router"]).by
    (['site', 'router'], 'router')
    """
    parser.add_argument("--by", default=None, type=key_columns,
                        help=f"{help}; a,b for a composite key")


def key_columns(text: str) -> str | list[str]:
    """``--by``'s value: one column name, or a list of them from ``a,b``.

    Examples
    --------
    >>> key_columns("site, router")
    ['site', 'router']
    >>> key_columns("site,")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: a key is one column or several separated by commas, e.g. \
'site,router'; got 'site,'
    """
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        msg = (f"a key is one column or several separated by commas, e.g. 'site,router'; "
               f"got {text!r}")
        raise argparse.ArgumentTypeError(msg)
    return names[0] if len(names) == 1 else names


def named_columns(value: object) -> list[str]:
    """The column names an option or a parameter gives: one name, a list of them (a composite
    key), or none (anything else is not a name, an expression say).

    Examples
    --------
    >>> named_columns("router"), named_columns(["site", "router"]), named_columns(None)
    (['router'], ['site', 'router'], [])
    """
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def check_columns(info: InputInfo, **options: str | list[str] | None) -> None:
    """Raise if an option names a column the input does not have (with close matches); an
    option may name several (a composite ``--by``).

    Examples
    --------
    >>> info = InputInfo("r.csv", "csv", ("router", "ts", "loss_rate"))
    >>> check_columns(info, time="ts", by=["router", "ruter"])
    Traceback (most recent call last):
    ...
    ValueError: `--by` names column 'ruter', which r.csv does not have (did you mean ...
    """
    if info.columns is None:
        return
    for option, named in options.items():
        for column in named_columns(named):
            if column not in info.columns:
                raise ValueError(missing_column("`--" + option.replace("_", "-") + "`", column,
                                                info))


def missing_column(named: str, column: str, info: InputInfo) -> str:
    """The message for ``named`` (an option, a pipeline key, an expression) naming ``column``,
    which ``info`` lacks: the closest column, and all of them.

    Examples
    --------
    >>> missing_column("`by`", "ruter", InputInfo("r.csv", "csv", ("router", "ts")))
    ... # doctest: +NORMALIZE_WHITESPACE
    "`by` names column 'ruter', which r.csv does not have (did you mean 'router'?);
    its columns: router, ts"
    """
    columns = info.columns or ()
    close = difflib.get_close_matches(column, columns, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"{named} names column {column!r}, which {info.path} does not have{hint}; "
            f"its columns: {', '.join(columns)}")


def read_input(spark, args: argparse.Namespace, info: InputInfo, schema=None):
    """Read ``args.input`` as a batch or (with ``--stream``) a streaming DataFrame.

    CSV and JSON are read permissively: a malformed line keeps its text in
    ``_corrupt_record`` so that it can be set aside rather than lost. CSV follows the standard
    quoting: a quote inside a quoted field is written twice.
    """
    if getattr(args, "stream", False):
        if schema is None:
            schema = read_with(spark.read, info, None).schema
        reader = spark.readStream.option("maxFilesPerTrigger", args.max_files_per_trigger)
        return read_with(reader, info, schema)
    return read_with(spark.read, info, schema)


def read_with(reader, info: InputInfo, schema):
    """Read ``info.path`` in its format with a batch or stream ``reader``: CSV with a header and
    standard quoting, CSV and JSON permissively (a malformed line stays in
    ``_corrupt_record``), the schema inferred unless given.

    Examples
    --------
    >>> import tempfile
    >>> from windowkit.spark import windowkit_session
    >>> spark = windowkit_session()
    >>> path = os.path.join(tempfile.mkdtemp(), "r.csv")
    >>> _ = open(path, "w").write('a,b\\n1,"say ""hi"" now"\\n')
    >>> read_with(spark.read, InputInfo(path, "csv", None), None).first()
    Row(a=1, b='say "hi" now')
    """
    if schema is not None:
        reader = reader.schema(schema)
    if info.format == "csv":
        reader = (reader.option("header", "true").option("mode", "PERMISSIVE")
                  .option("escape", '"'))
        if schema is None:
            reader = reader.option("inferSchema", "true")
        return reader.csv(info.path)
    if info.format == "json":
        return reader.option("mode", "PERMISSIVE").json(info.path)
    return reader.parquet(info.path)


# ----------------------------------------------------------------------------------- output
def check_output(path: str, overwrite: bool = False, parts: Iterable[str | tuple[str, str]] = (),
                 option: str = "`--output`") -> None:
    """Refuse an output location windowkit cannot or must not write, before any work.

    A directory is accepted when it does not exist yet, is empty, was written by windowkit
    (it holds the ``_windowkit`` mark), or ``overwrite`` is set; it must be writable (a probe
    folder is created and removed). Each of ``parts`` (a path inside it, or a path and its
    kind, see :mod:`windowkit.cli.ownership`) the run will replace must hold only files
    windowkit wrote: files the user had are never deleted.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     open(os.path.join(d, "notes.txt"), "w").close()
    ...     check_output(d)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `--output` ... holds files windowkit did not write (notes.txt); ...
    >>> check_output("/proc/windowkit_out")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `--output` /proc/windowkit_out is not writable: cannot create a folder in /proc ...
    """
    if is_remote(path):
        return
    local = os.path.abspath(_local(path))
    if os.path.isfile(local):
        msg = f"{option} {path} is a file; give a directory"
        raise ValueError(msg)
    parent = local
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        msg = f"{option} {path} lies under the file {parent}; give a directory"
        raise ValueError(msg)
    _probe_writable(path, parent, option)
    if parent == local and not overwrite:
        entries = sorted(os.listdir(local))
        if entries and OUTPUT_MARK not in entries:
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            msg = (f"{option} {path} holds files windowkit did not write ({shown}); choose a "
                   "new or empty directory, or pass --overwrite to replace what windowkit writes "
                   "there")
            raise ValueError(msg)
    for part in parts:
        name, kind = (part, SPARK) if isinstance(part, str) else part
        check_part(local, name, kind, option)


def _probe_writable(path: str, parent: str, option: str) -> None:
    """Create and remove a folder where the output will be created: permissions, read-only and
    virtual file systems all answer this, where ``os.access`` may not (as root, say)."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix="._windowkit_probe_", dir=parent))
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        msg = f"{option} {path} is not writable: cannot create a folder in {parent} ({reason})"
        raise ValueError(msg) from exc


def claim_output(path: str) -> None:
    """Create the output directory and mark it as windowkit's (local paths)."""
    if is_remote(path):
        return
    local = _local(path)
    os.makedirs(local, exist_ok=True)
    mark = os.path.join(local, OUTPUT_MARK)
    if not os.path.exists(mark):
        with open(mark, "w") as handle:
            handle.write("written by windowkit; its results are the folders beside this file, "
                         f"listed in {MANIFEST}\n")


def claim_output_part(output: str, part: str, kind: str = SPARK) -> str:
    """The path of ``part`` of the output, checked and recorded as windowkit's just before it is
    written (remote outputs: the path only).

    Examples
    --------
    >>> claim_output_part("hdfs://nn/out", "frames")
    'hdfs://nn/out/frames'
    """
    if is_remote(output):
        return f"{output.rstrip('/')}/{part}"
    return claim_part(_local(output), part, kind)


def check_positive(name: str, value: int | None) -> None:
    """``ValueError`` unless ``value`` is None or an integer >= 1 (``--shards`` and the like).

    Examples
    --------
    >>> check_positive("shards", 0)
    Traceback (most recent call last):
    ...
    ValueError: `--shards` must be an integer in [1, inf); got 0
    """
    if value is not None and value < 1:
        msg = f"`--{name.replace('_', '-')}` must be an integer in [1, inf); got {value}"
        raise ValueError(msg)


def check_stream_options(args: argparse.Namespace) -> None:
    """``--checkpoint`` with ``--stream``; ``--late`` a duration Spark and windowkit read alike."""
    from windowkit.core.durations import Duration

    if not getattr(args, "stream", False):
        return
    if not args.checkpoint:
        msg = "`--checkpoint` is required with `--stream`"
        raise ValueError(msg)
    if args.late and args.late.strip() not in ("0", "0 seconds"):
        Duration.parse(args.late, "--late", allow_rows=False)
    check_positive("max_files_per_trigger", args.max_files_per_trigger)


# --------------------------------------------------------------------------------- progress
class Progress:
    """One line per step with elapsed seconds, on stderr (visible progress on long runs).

    Examples
    --------
    >>> p = Progress(stream=sys.stdout)
    >>> p.step("reading")  # doctest: +ELLIPSIS
    [windowkit ...s] reading
    """

    def __init__(self, stream=None, quiet: bool = False) -> None:
        self.t0 = time.perf_counter()
        self.stream = stream or sys.stderr
        #: ``--quiet``: steps only, no live line of Spark's stages
        self.quiet = quiet

    def step(self, message: str) -> None:
        elapsed = time.perf_counter() - self.t0
        print(f"[windowkit {elapsed:6.1f}s] {message}", file=self.stream, flush=True)


def summarize(counts: dict[str, int]) -> str:
    """``{"final": 3, "malformed": 1}`` -> ``"3 final, 1 malformed"``.

    Examples
    --------
    >>> summarize({"malformed": 1, "final": 3}), summarize({})
    ('3 final, 1 malformed', 'no rows')
    """
    if not counts:
        return "no rows"
    return ", ".join(f"{n:,} {name}" for name, n in sorted(counts.items(), key=lambda kv: -kv[1]))


# ---------------------------------------------------------------------------------- running
def start_spark(args: argparse.Namespace, app_name: str, progress: Progress):
    """The SparkSession for a command: local mode unless ``--master`` or ``--remote``; quiet
    unless ``--verbose``."""
    from windowkit.pipeline.progress import status_conf
    from windowkit.spark.session import windowkit_session

    remote = getattr(args, "remote", None)
    default = "spark-submit's master" if "PYSPARK_GATEWAY_PORT" in os.environ else DEFAULT_MASTER
    progress.step(f"starting Spark ({remote or args.master or default})")
    return windowkit_session(args.master, app_name=app_name,
                             quiet=not getattr(args, "verbose", False), remote=remote,
                             extra_conf=status_conf(remote))


def check_expression(df, option: str, expression: str | None, predicate: bool = True) -> None:
    """Raise ``ValueError`` naming ``--option`` if ``expression`` does not parse, names a
    column ``df`` lacks (Spark's own message, with its "did you mean", on one line) or, for a
    ``predicate``, is not true or false."""
    if expression is None:
        return
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    try:
        dtype = df.select(F.expr(expression)).schema.fields[0].dataType
    except PySparkException as exc:
        text = str(exc).strip().splitlines()[0]
        msg = f"`--{option}` {expression!r}: {text}"
        raise ValueError(msg) from exc
    if predicate and not isinstance(dtype, T.BooleanType):
        msg = (f"`--{option}` {expression!r} is not a predicate: it gives "
               f"{dtype.simpleString()}, not true or false")
        raise ValueError(msg)


#: The column :func:`write_split` counts outcomes by: a rejected row's reason, else what it is.
OUTCOME = "wk_outcome"


def write_split(result, args: argparse.Namespace, names: tuple[str, str], progress: Progress,
                kept) -> dict[str, int]:
    """Write ``result``'s rows and its rejected rows (as :func:`~windowkit.spark.split_rejected`
    splits them) to the parts ``names``; return the rows by outcome: a rejected row's reason,
    else the value of ``kept`` (a Column or a column name).

    Examples
    --------
    >>> import tempfile
    >>> from pyspark.sql import functions as F
    >>> from windowkit.spark import windowkit_session
    >>> spark = windowkit_session()
    >>> out = tempfile.mkdtemp()
    >>> df = spark.createDataFrame([(1, None, None), (None, "malformed", "{}")],
    ...                            "x long, rejected string, detail string")
    >>> args = argparse.Namespace(output=out, output_format="parquet")
    >>> write_split(df, args, ("rows", "rejected"), Progress(quiet=True), F.lit("kept"))
    {'kept': 1, 'malformed': 1}
    """
    from pyspark.sql import functions as F

    from windowkit.spark import split_rejected

    outcome = result.withColumn(OUTCOME, F.coalesce(F.col("rejected"), kept))
    counts = write_outputs(outcome, args, lambda r: dict(zip(
        names, split_rejected(r.drop(OUTCOME)), strict=True)), progress, count_by=OUTCOME)
    return dict(sorted(counts.items()))


def write_outputs(result, args: argparse.Namespace, split, progress: Progress,
                  count_by: str = "status") -> dict[str, int]:
    """Write ``split(result)``'s parts under ``--output`` in ``--output-format`` (batch:
    overwrite windowkit's own folders; stream: exactly once per micro-batch) and return the
    counts of ``count_by``."""
    from windowkit.spark.sinks import write_frame

    output = args.output
    claim_output(output)
    if result.isStreaming:
        return _write_stream(result, args, split, progress, count_by)
    from windowkit.pipeline.progress import StageProgress

    result = result.persist()
    for name, part in split(result).items():
        with StageProgress(result.sparkSession, progress, f"writing {name}"):
            write_frame(part, claim_output_part(output, name), args.output_format)
    counts = {str(r[0]): r[1] for r in result.groupBy(count_by).count().collect()}
    result.unpersist()
    return counts


def read_written(spark, path: str, fmt: str):
    """A part windowkit wrote in ``fmt`` (:func:`write_outputs`), read back as a batch.

    Examples
    --------
    >>> import tempfile
    >>> from windowkit.spark import windowkit_session
    >>> from windowkit.spark.sinks import write_frame
    >>> spark = windowkit_session()
    >>> out = tempfile.mkdtemp() + "/t"
    >>> write_frame(spark.sql("SELECT 1 AS x, TIMESTAMP'2024-01-01 00:00:00' AS t"), out, "csv")
    >>> read_written(spark, out, "csv").dtypes
    [('x', 'int'), ('t', 'timestamp')]
    """
    if fmt == "csv":
        return spark.read.csv(path, header=True, inferSchema=True)
    return spark.read.parquet(path)


def _write_stream(result, args: argparse.Namespace, split, progress: Progress,
                  count_by: str) -> dict[str, int]:
    """Run ``result``'s query to the end, a line per micro-batch as ``windowkit run`` prints
    it; return the counts of ``count_by``."""
    from windowkit.pipeline.progress import MicroBatchProgress
    from windowkit.spark.session import is_connect
    from windowkit.spark.sinks import write_stream_exactly_once

    totals: dict[str, int] = {}
    micro = MicroBatchProgress(result.sparkSession, progress)
    micro.step = getattr(args, "command", None) or "windowkit"

    def on_batch(batch_id: int, counts: dict[str, int]) -> None:
        for k, v in counts.items():
            totals[k] = totals.get(k, 0) + v
        micro.on_batch(batch_id, {_outcome_name(k): v for k, v in counts.items()})

    try:
        query = write_stream_exactly_once(result, args.output, args.checkpoint,
                                          claiming_split(args.output, split), on_batch, count_by,
                                          args.output_format)
        micro.query_id = str(query.id)
        progress.step(f"streaming {args.input} (checkpoint {args.checkpoint})")
        query.awaitTermination()
        micro.flush(query)
    finally:
        micro.close()
    if is_connect(result.sparkSession):
        # the micro-batches ran on the server, which keeps their counts to itself
        rows_in = sum(report.numInputRows for report in query.recentProgress)
        progress.step(f"{rows_in:,} rows read; a Spark Connect stream's counts per "
                      f"outcome are in the output's parts, not printed here")
    return totals


def _outcome_name(value: object) -> str:
    """A counted outcome as a progress line names it: a null rejection reason is a kept row.

    Examples
    --------
    >>> _outcome_name(None), _outcome_name("None"), _outcome_name("late")
    ('kept', 'kept', 'late')
    """
    return "kept" if value is None or value == "None" else str(value)


def claiming_split(output: str, split):
    """``split`` that checks and records each part it names as windowkit's before the part is
    first written (streams: once per part and run, not per micro-batch).

    Examples
    --------
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> claiming_split(out, lambda batch: {"frames": batch})("rows")
    {'frames': 'rows'}
    >>> from windowkit.cli.ownership import read_manifest
    >>> read_manifest(out)["spark"]
    ['frames']
    """
    claimed: set[str] = set()

    def split_claimed(batch):
        parts = split(batch)
        for name in parts.keys() - claimed:
            claim_output_part(output, name)
            claimed.add(name)
        return parts

    return split_claimed
