"""``windowkit frames``: threshold frames over files, as a batch job or a stream."""

from __future__ import annotations

import argparse
import os

from windowkit.cli.common import (
    Progress,
    add_io_arguments,
    check_columns,
    check_expression,
    check_output,
    check_positive,
    check_stream_options,
    inspect_input,
    read_input,
    start_spark,
    summarize,
    write_outputs,
)
from windowkit.core.frames import ThresholdFrameSpec


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``frames`` subcommand.

    Examples
    --------
    >>> from windowkit.cli import build_parser
    >>> args = build_parser().parse_args(["frames", "--input", "in", "--time", "t",
    ...     "--when", "x > 1", "--output", "out", "--min-duration", "3 rows"])
    >>> args.min_duration, args.missing, args.duplicates
    ('3 rows', 'unsatisfied', 'keep')
    """
    p = subparsers.add_parser(
        "frames",
        help="maximal periods where a predicate holds (threshold frames)",
        description="Threshold frames: maximal periods where --when holds for at least "
                    "--min-duration, per --by key. Writes OUTPUT/frames and OUTPUT/rejected "
                    "(malformed and late rows, never dropped) as Parquet.",
    )
    add_io_arguments(p)
    p.add_argument("--time", required=True, help="event-time column")
    p.add_argument("--by", default=None, help="key column (frames per key)")
    p.add_argument("--when", required=True, help="SQL predicate, e.g. 'loss_rate > 0.003'")
    p.add_argument("--min-duration", default="1 rows", help="'3 rows' or '90 seconds'")
    p.add_argument("--missing", choices=("unsatisfied", "satisfying"), default="unsatisfied",
                   help="missing values break frames or are bridged between satisfying ones")
    p.add_argument("--schedule", default=None, help="reporting period, e.g. '30 seconds'")
    p.add_argument("--fragment-every", default=None, help="emit partial frames this often")
    p.add_argument("--duplicates", choices=("keep", "any", "all"), default="keep",
                   help="rows of one key at one time: all are reports (keep), or one report "
                        "that holds if any / all of them hold")
    p.add_argument("--shards", type=int, default=None, help="Spark groups the keys share")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the ``frames`` subcommand; return the exit code."""
    ThresholdFrameSpec.create(args.min_duration, args.missing, args.schedule,
                              args.fragment_every, args.duplicates)
    check_positive("shards", args.shards)
    check_stream_options(args)
    info = inspect_input(args.input, args.format)
    check_columns(info, time=args.time, by=args.by)
    check_output(args.output, args.overwrite)
    progress = Progress()
    spark = start_spark(args, "windowkit frames", progress)
    from windowkit.spark import split_rejected, threshold_frames

    df = read_input(spark, args, info)
    check_expression(df, "when", args.when)
    result = threshold_frames(
        df, args.time, args.when, by=args.by, min_duration=args.min_duration,
        missing=args.missing, schedule=args.schedule, fragment_every=args.fragment_every,
        duplicates=args.duplicates, late=getattr(args, "late", None), shards=args.shards,
        time_unit=args.time_unit,
    )
    progress.step(f"framing {args.input}")
    counts = write_outputs(result, args, lambda r: dict(zip(("frames", "rejected"),
                                                            split_rejected(r), strict=True)),
                           progress)
    progress.step(f"done: {summarize(counts)}")
    print(f"frames:   {os.path.join(args.output, 'frames')}\n"
          f"rejected: {os.path.join(args.output, 'rejected')}")
    return 0
