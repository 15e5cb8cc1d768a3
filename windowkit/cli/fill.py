"""``windowkit fill``: fill frames written by ``windowkit frames`` with the rows of another table.

The paper's Definition 6: each frame ``[start, end)`` (shifted by ``--before`` and ``--after``)
gets the rows of ``--input`` whose time falls in it, of its own ``--by`` key; with
``--aggregate`` one row per frame holds the aggregates, else one row per (frame, row). Rows
of ``--input`` with a null ``--by`` key or a null or unparsable time are written to
OUTPUT/rejected with the reason and the row as JSON, and counted. Batch only on the command
line (``windowkit.spark.fill_frames`` also fills streams).
"""

from __future__ import annotations

import argparse
import os

from windowkit.cli.common import (
    Progress,
    add_by_argument,
    add_io_arguments,
    check_columns,
    check_output,
    inspect_input,
    read_input,
    start_spark,
    summarize,
    write_split,
)
from windowkit.cli.expressions import check_sql
from windowkit.core.durations import Duration


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``fill`` subcommand.

    Examples
    --------
    >>> from windowkit.cli import build_parser
    >>> args = build_parser().parse_args(["fill", "--frames", "out/frames", "--input", "bgp",
    ...     "--time", "ts", "--output", "filled", "--aggregate", "n=count(*)"])
    >>> args.before, args.after, args.aggregate
    ('30 seconds', '0 seconds', ['n=count(*)'])
    """
    p = subparsers.add_parser(
        "fill", help="fill frames with the rows of another table",
        description="Fill frames written by windowkit frames with the rows of --input: each "
                    "frame [start - --before, end + --after) gets the rows of its --by key "
                    "whose time falls in it (one row per frame and row, or one row of "
                    "--aggregate values per frame). Writes OUTPUT/filled and OUTPUT/rejected.")
    add_io_arguments(p, stream=False)
    p.add_argument("--frames", required=True,
                   help="frames as written by `windowkit frames` (OUTPUT/frames, Parquet)")
    p.add_argument("--time", required=True, help="event-time column of --input")
    add_by_argument(p, "key column of both (default: every frame gets every key's rows)")
    p.add_argument("--before", default="30 seconds", help="reach before a frame's start")
    p.add_argument("--after", default="0 seconds", help="reach after a frame's end")
    p.add_argument("--aggregate", action="append", default=None, metavar="NAME=SQL",
                   help="an aggregate per frame, e.g. 'n=count(*)' (repeatable); without it, "
                        "one output row per frame and filler row")
    p.set_defaults(handler=run)


def parse_aggregates(specs: list[str] | None) -> dict[str, str] | None:
    """``["n=count(*)"]`` -> ``{"n": "count(*)"}``; ``ValueError`` naming ``--aggregate``.

    Examples
    --------
    >>> parse_aggregates(["n=count(*)", "peak = max(size)"])
    {'n': 'count(*)', 'peak': 'max(size)'}
    """
    if not specs:
        return None
    out = {}
    for spec in specs:
        name, sep, expression = spec.partition("=")
        if not sep or not name.strip().isidentifier() or not expression.strip():
            msg = f"`--aggregate` must look like NAME=SQL, e.g. 'n=count(*)'; got {spec!r}"
            raise ValueError(msg)
        out[name.strip()] = expression.strip()
    return out


def run(args: argparse.Namespace) -> int:
    """Run the ``fill`` subcommand; return the exit code."""
    aggregates = parse_aggregates(args.aggregate)
    for name in ("before", "after"):
        value = getattr(args, name)
        if value.strip().split(" ")[0] not in ("0", "0.0"):
            Duration.parse(value, f"--{name}", allow_rows=False)
    frames_info = inspect_input(args.frames, "parquet", "--frames")
    check_columns(frames_info, by=args.by)
    info = inspect_input(args.input, args.format)
    check_columns(info, time=args.time, by=args.by)
    for expression in (aggregates or {}).values():
        check_sql(expression, "--aggregate", info, predicate=False)
    check_output(args.output, args.overwrite, parts=("filled",))
    progress = Progress(quiet=getattr(args, "quiet", False))
    spark = start_spark(args, "windowkit fill", progress)
    from pyspark.sql import functions as F

    from windowkit.cli.common import check_expression
    from windowkit.spark.fill import fill_frames

    frames = spark.read.parquet(args.frames)
    data = read_input(spark, args, info)
    for expression in (aggregates or {}).values():
        check_expression(data, "aggregate", expression, predicate=False)
    exprs = None if aggregates is None else {n: F.expr(e) for n, e in aggregates.items()}
    filled = fill_frames(frames, data, args.time, by=args.by, before=args.before,
                         after=args.after, aggregates=exprs, time_unit=args.time_unit)
    progress.step(f"filling {args.frames} with {args.input}")
    counts = write_split(filled, args, ("filled", "rejected"), progress, kept=F.lit("filled"))
    kept = counts.pop("filled", 0)
    progress.step(f"done: {kept:,} filled rows; set aside: {summarize(counts)}")
    print(f"filled:   {os.path.join(args.output, 'filled')}\n"
          f"rejected: {os.path.join(args.output, 'rejected')}")
    return 0
