"""``windowkit widen``: progressive window widening over a system-call trace or a table.

Text traces (``--format strace`` or ``syscalls``) are converted on the driver and run through
the core operator, no Spark needed; their unparsable lines are counted and written apart. Their
results are written as the table runs write theirs: folders ``detections`` and ``rejected`` of
Parquet with timestamps (strace's ``-tt`` times are times of day, read as on 1970-01-01), or
CSV with ``--output-format csv``.
Tables (``csv``, ``json``, ``parquet``) go through Spark's ``widen_detect``, as a batch job or,
with ``--stream``, as Structured Streaming over the files of ``--input``.
"""

from __future__ import annotations

import argparse
import os

from windowkit.cli.common import (
    Progress,
    add_by_argument,
    add_output_format_argument,
    add_spark_arguments,
    check_columns,
    check_output,
    check_positive,
    check_stream_options,
    claim_output,
    claim_output_part,
    inspect_input,
    read_input,
    start_spark,
    summarize,
    write_split,
)
from windowkit.core.durations import TIME_UNITS, to_micros

TEXT_FORMATS = ("strace", "syscalls")
#: The output folders of every run, from a trace or a table.
OUTPUTS = ("detections", "rejected")
#: The detections' columns holding times in microseconds (``times`` too, as comma text).
_TIME_COLUMNS = ("window_start", "window_end", "detected_at", "first_time", "last_time")
TABLE_FORMATS = ("csv", "json", "parquet")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``widen`` subcommand.

    Examples
    --------
    >>> from windowkit.cli import build_parser
    >>> args = build_parser().parse_args(["widen", "--input", "t.strace", "--format", "strace",
    ...     "--max-duration", "10 seconds", "--output", "out"])
    >>> args.episode, args.base, args.max_length
    ('remote-shell', '1 second', 32)
    """
    p = subparsers.add_parser(
        "widen",
        help="a pattern detector over windows of doubling duration (progressive widening)",
        description="Progressive window widening: run an episode detector over sliding "
                    "windows of --base * 2**k per key, at most 4 * --max-length rows each. "
                    "Writes OUTPUT/detections and OUTPUT/rejected.",
    )
    p.add_argument("--input", required=True, help="trace file, or table file/directory")
    p.add_argument("--format", choices=TEXT_FORMATS + TABLE_FORMATS, default="strace",
                   help="strace -f -tt output, the paper's syscall lines, or a table")
    p.add_argument("--episode", default="remote-shell",
                   help="episode file (the text form), or 'remote-shell' (the paper's)")
    p.add_argument("--base", default="1 second", help="base batch duration d0")
    p.add_argument("--max-length", type=int, default=32, help="L: rows a pattern spans")
    p.add_argument("--max-duration", default=None, help="T: longest pattern duration")
    p.add_argument("--levels", type=int, default=None, help="number of levels instead of T")
    p.add_argument("--report", choices=("first", "all"), default="first",
                   help="a match is reported once, at its first detection (first), or in "
                        "every window holding it (all)")
    p.add_argument("--key", choices=("pid", "host"), default="pid",
                   help="strace: one key per process or one for the host")
    p.add_argument("--unit", default="1 second", help="syscalls: time between two lines")
    p.add_argument("--time", default="time", help="tables: event-time column")
    p.add_argument("--time-unit", choices=TIME_UNITS, default=None,
                   help="tables: unit of an integer --time column")
    p.add_argument("--overwrite", action="store_true",
                   help="allow an output directory that holds files windowkit did not write")
    p.add_argument("--verbose", action="store_true", help="show Spark's log and tracebacks")
    add_by_argument(p, "tables: key column")
    p.add_argument("--output", required=True, help="output directory")
    add_output_format_argument(p)
    add_spark_arguments(p, when="tables: ")
    p.add_argument("--stream", action="store_true", help="tables: Structured Streaming")
    p.add_argument("--checkpoint", default=None, help="checkpoint directory for --stream")
    p.add_argument("--max-files-per-trigger", type=int, default=1,
                   help="tables: files per micro-batch with --stream")
    p.add_argument("--late", default="1 minute", help="--stream: watermark delay")
    p.set_defaults(handler=run)


def load_episode(spec: str):
    """The detector of ``--episode``: a file's episode or ``remote-shell``; errors name the file.

    Examples
    --------
    >>> load_episode("remote-shell").episode.arg_names
    ('exe', 'fd')
    """
    from windowkit.core.widening import EpisodeDetector

    if spec.strip() == "remote-shell":
        return EpisodeDetector("remote-shell")
    if not os.path.isfile(spec):
        msg = f"`--episode` must be 'remote-shell' or an episode file; no file {spec!r}"
        raise ValueError(msg)
    with open(spec, encoding="utf-8") as f:
        text = f.read()
    try:
        return EpisodeDetector(text)
    except ValueError as exc:
        msg = f"{spec}: {exc}"
        raise ValueError(msg) from exc


def run(args: argparse.Namespace) -> int:
    """Run the ``widen`` subcommand; return the exit code."""
    from windowkit.core.widening import WideningConfig

    detector = load_episode(args.episode)
    config = WideningConfig.create(args.base, args.max_length, args.max_duration, args.levels,
                                   args.report)
    if args.format in TEXT_FORMATS:
        if not os.path.isfile(args.input):
            msg = f"`--input` {args.input} is not a file"
            raise ValueError(msg)
        check_output(args.output, args.overwrite, parts=OUTPUTS)
        claim_output(args.output)
        return _run_trace(args, detector, config)
    return _run_table(args, detector, config)


def _run_trace(args: argparse.Namespace, detector, config) -> int:
    import pandas as pd

    from windowkit.core.widening import WindowWidening
    from windowkit.core.widening.syscalls import read_strace, read_syscalls

    with open(args.input, encoding="utf-8", errors="replace") as f:
        if args.format == "strace":
            rows, rejected = read_strace(f, key=args.key)
        else:
            rows, rejected = read_syscalls(f, unit=to_micros(args.unit, "unit"))
    op = WindowWidening(detector, config=config)
    found = pd.concat([op.process(rows), op.finish()], ignore_index=True) if len(rows) \
        else op.empty_output()
    for table, name in zip((_with_timestamps(found), rejected), OUTPUTS, strict=True):
        _write_table(table, claim_output_part(args.output, name), args.output_format)
    print(f"{len(rows)} calls read, {len(rejected)} lines set aside "
          f"({_counts(rejected)}), {len(found)} detections")
    if len(found):
        print(found[["key", "level", "first_time", "last_time", "detected_at"]].to_string(
            index=False))
    print(f"detections: {os.path.join(args.output, 'detections')}\n"
          f"rejected:   {os.path.join(args.output, 'rejected')}")
    return 0


def _with_timestamps(found):
    """The core's detections as ``widen_detect`` gives a table's: times as timestamps, and
    ``times`` and ``ordinals`` as lists.

    Examples
    --------
    >>> import pandas as pd
    >>> found = pd.DataFrame({"window_start": [0], "window_end": [2_000_000],
    ...     "detected_at": [2_000_000], "first_time": [1], "last_time": [5],
    ...     "times": ["1,5"], "ordinals": ["0,0"]})
    >>> row = _with_timestamps(found).iloc[0]
    >>> str(row["window_end"]), [str(t) for t in row["times"]], row["ordinals"]
    ('1970-01-01 00:00:02', ['1970-01-01 00:00:00.000001', '1970-01-01 00:00:00.000005'], [0, 0])
    """
    import pandas as pd

    out = found.copy()
    for name in _TIME_COLUMNS:
        out[name] = pd.to_datetime(out[name], unit="us").astype("datetime64[us]")
    out["times"] = [list(pd.to_datetime([int(t) for t in text.split(",")], unit="us"))
                    for text in out["times"]]
    out["ordinals"] = [[int(o) for o in text.split(",")] for text in out["ordinals"]]
    return out


def _write_table(table, folder: str, fmt: str) -> None:
    """Write a pandas table as one file of the folder ``folder`` (replaced), as Spark writes a
    part: Parquet, or CSV with lists as JSON text."""
    import json
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    if fmt == "parquet":
        table.to_parquet(os.path.join(folder, "part-00000.parquet"), index=False)
        return
    lists = [c for c in table.columns if len(table) and isinstance(table[c].iloc[0], list)]
    text = table.assign(**{c: [json.dumps(row, default=str) for row in table[c]]
                           for c in lists})
    text.to_csv(os.path.join(folder, "part-00000.csv"), index=False)


def _counts(rejected) -> str:
    if not len(rejected):
        return "none"
    return ", ".join(f"{n} {reason}" for reason, n in rejected["reason"].value_counts().items())


def _run_table(args: argparse.Namespace, detector, config) -> int:
    check_positive("max_files_per_trigger", args.max_files_per_trigger)
    check_stream_options(args)
    info = inspect_input(args.input, args.format)
    check_columns(info, time=args.time, by=args.by)
    check_output(args.output, args.overwrite, parts=("detections", "rejected"))
    progress = Progress(quiet=getattr(args, "quiet", False))
    spark = start_spark(args, "windowkit widen", progress)
    from pyspark.sql import functions as F

    from windowkit.spark import widen_detect

    df = read_input(spark, args, info)
    result = widen_detect(df, args.time, by=args.by, detector=detector, base=config.base,
                          max_length=config.max_length, levels=config.levels,
                          report=config.report, late=args.late, time_unit=args.time_unit)
    progress.step(f"detecting in {args.input}")
    counts = write_split(result, args, ("detections", "rejected"), progress,
                         kept=F.lit("detections"))
    found = counts.pop("detections", 0)
    progress.step(f"done: {found:,} detections; set aside: {summarize(counts)}")
    print(f"detections: {os.path.join(args.output, 'detections')}\n"
          f"rejected:   {os.path.join(args.output, 'rejected')}")
    return 0
