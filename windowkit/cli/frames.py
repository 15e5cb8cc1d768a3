"""``windowkit frames``: threshold frames over files, as a batch job or a stream."""

from __future__ import annotations

import argparse
import os

from windowkit.cli.common import (
    Progress,
    add_by_argument,
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
    write_split,
)
from windowkit.cli.expressions import check_sql


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``frames`` subcommand.

    Examples
    --------
    >>> from windowkit.cli import build_parser
    >>> args = build_parser().parse_args(["frames", "--input", "in", "--time", "t",
    ...     "--when", "x > 1", "--output", "out", "--min-duration", "3 rows"])
    >>> args.min_duration, args.missing, args.duplicates, args.extent
    ('3 rows', 'unsatisfied', 'keep', 'conservative')
    """
    p = subparsers.add_parser(
        "frames",
        help="data-driven windows: threshold, boundary, delta and aggregate frames",
        description="Frames per --by key: maximal periods where --when holds (threshold), "
                    "or where --value stays between multiples of --x (boundary), drifts less "
                    "than --x (delta) or --func(--value) --op --x (aggregate), at least "
                    "--min-duration long. Writes OUTPUT/frames and OUTPUT/rejected "
                    "(malformed and late rows, never dropped) as Parquet.",
    )
    add_io_arguments(p)
    p.add_argument("--time", required=True, help="event-time column")
    add_by_argument(p, "key column (frames per key)")
    p.add_argument("--kind", choices=KINDS, default="threshold",
                   help="threshold (--when holds), boundary (--value crosses a multiple of "
                        "--x), delta (max - min of --value reaches --x), aggregate (--func of "
                        "--value --op --x)")
    p.add_argument("--when", default=None,
                   help="threshold: SQL predicate, e.g. 'loss_rate > 0.003'")
    p.add_argument("--value", default=None, help="boundary, delta, aggregate: the column")
    p.add_argument("--x", type=float, default=None, help="boundary, delta, aggregate: x")
    p.add_argument("--func", choices=("count", "sum", "mean", "min", "max"), default="sum",
                   help="aggregate: the aggregate")
    p.add_argument("--op", choices=("<", "<=", ">", ">="), default=">",
                   help="aggregate: the comparison with --x")
    p.add_argument("--extent", choices=("conservative", "liberal"), default="conservative",
                   help="liberal frames run from the last report outside the frame (for "
                        "threshold: the last that did not satisfy --when) to the next one")
    p.add_argument("--min-duration", default="1 rows", help="'3 rows' or '90 seconds'")
    p.add_argument("--missing", choices=("unsatisfied", "satisfying"), default="unsatisfied",
                   help="missing values break frames or are bridged between satisfying ones")
    p.add_argument("--schedule", default=None, help="reporting period, e.g. '30 seconds'")
    p.add_argument("--fragment-every", default=None, help="emit partial frames this often")
    p.add_argument("--duplicates", choices=("keep", "any", "all"), default="keep",
                   help="rows of one key at one time: all are reports (keep), or, threshold "
                        "only, one report that holds if any / all of them hold")
    p.add_argument("--shards", type=int, default=None, help="Spark groups the keys share")
    p.set_defaults(handler=run)


KINDS = ("threshold", "boundary", "delta", "aggregate")


def run(args: argparse.Namespace) -> int:
    """Run the ``frames`` subcommand; return the exit code."""
    check_positive("shards", args.shards)
    check_stream_options(args)
    info = inspect_input(args.input, args.format)
    check_columns(info, time=args.time, by=args.by, value=args.value)
    check_sql(args.when, "--when", info)
    _check_kind(args)
    check_output(args.output, args.overwrite, parts=("frames", "rejected"))
    progress = Progress(quiet=getattr(args, "quiet", False))
    spark = start_spark(args, "windowkit frames", progress)
    df = read_input(spark, args, info)
    check_expression(df, "when", args.when)
    result = _frames(df, args)
    progress.step(f"framing {args.input} ({args.kind} frames)")
    counts = write_split(result, args, ("frames", "rejected"), progress, kept="status")
    progress.step(f"done: {summarize(counts)}")
    print(f"frames:   {os.path.join(args.output, 'frames')}\n"
          f"rejected: {os.path.join(args.output, 'rejected')}")
    return 0


def _check_kind(args: argparse.Namespace) -> None:
    """The options each kind needs, before Spark starts: the core framer is built once."""
    from windowkit.core.frames import (
        AggregateFramer,
        BoundaryFramer,
        DeltaFramer,
        SequenceFrameSpec,
        ThresholdFramer,
    )

    spec = SequenceFrameSpec.create(args.min_duration, args.missing, args.schedule,
                                    args.fragment_every, args.extent, args.duplicates)
    if args.kind == "threshold":
        if args.when is None:
            msg = "`--when` is required with --kind threshold (e.g. --when 'loss_rate > 0.003')"
            raise ValueError(msg)
        ThresholdFramer(spec=spec)
        return
    if args.value is None or args.x is None:
        msg = f"`--value` and `--x` are required with --kind {args.kind}"
        raise ValueError(msg)
    if args.when is not None:
        msg = f"`--when` is for --kind threshold; --kind {args.kind} frames --value by --x"
        raise ValueError(msg)
    if args.kind == "aggregate":
        AggregateFramer(args.func, args.op, args.x, spec=spec)
    else:
        (BoundaryFramer if args.kind == "boundary" else DeltaFramer)(args.x, spec=spec)


def _frames(df, args: argparse.Namespace):
    from windowkit.spark import threshold_frames
    from windowkit.spark.framings import aggregate_frames, boundary_frames, delta_frames

    common = {"by": args.by, "min_duration": args.min_duration, "missing": args.missing,
              "schedule": args.schedule, "fragment_every": args.fragment_every,
              "late": getattr(args, "late", None), "shards": args.shards,
              "time_unit": args.time_unit, "extent": args.extent, "duplicates": args.duplicates}
    if args.kind == "threshold":
        return threshold_frames(df, args.time, args.when, **common)
    if args.kind == "boundary":
        return boundary_frames(df, args.time, args.value, args.x, **common)
    if args.kind == "delta":
        return delta_frames(df, args.time, args.value, args.x, **common)
    return aggregate_frames(df, args.time, args.value, args.func, args.op, args.x, **common)
