"""``windowkit frames``: threshold frames over files, as a batch job or a stream."""

from __future__ import annotations

import argparse
import os

from windowkit.cli.common import Progress, add_io_arguments, read_input
from windowkit.core.frames import ThresholdFrameSpec


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``frames`` subcommand.

    Examples
    --------
    >>> from windowkit.cli import build_parser
    >>> args = build_parser().parse_args(["frames", "--input", "in", "--time", "t",
    ...     "--when", "x > 1", "--output", "out", "--min-duration", "3 rows"])
    >>> args.min_duration, args.missing
    ('3 rows', 'unsatisfied')
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
    p.add_argument("--shards", type=int, default=None, help="Spark groups the keys share")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the ``frames`` subcommand; return the exit code."""
    ThresholdFrameSpec.create(args.min_duration, args.missing, args.schedule,
                              args.fragment_every)  # fail on bad parameters before Spark starts
    progress = Progress()
    from windowkit.spark import split_rejected, threshold_frames, windowkit_session

    progress.step(f"starting Spark ({args.master or 'local[*]'})")
    spark = windowkit_session(args.master, app_name="windowkit frames",
                              extra_conf={"spark.sql.ansi.enabled": "false"})
    df = read_input(spark, args)
    result = threshold_frames(
        df, args.time, args.when, by=args.by, min_duration=args.min_duration,
        missing=args.missing, schedule=args.schedule, fragment_every=args.fragment_every,
        late=getattr(args, "late", None), shards=args.shards,
    )
    frames_path = os.path.join(args.output, "frames")
    rejected_path = os.path.join(args.output, "rejected")
    if df.isStreaming:
        return _run_stream(result, args, frames_path, rejected_path, progress)
    progress.step(f"framing {args.input}")
    result = result.cache()
    frames, rejected = split_rejected(result)
    frames.write.mode("overwrite").parquet(frames_path)
    rejected.write.mode("overwrite").parquet(rejected_path)
    counts = dict(result.groupBy("status").count().collect())
    progress.step(f"done: {counts.get('final', 0)} final frames, {counts.get('partial', 0)} "
                  f"partial fragments, {counts.get('malformed', 0)} malformed rows")
    print(f"frames:   {frames_path}\nrejected: {rejected_path}")
    return 0


def _run_stream(result, args: argparse.Namespace, frames_path: str, rejected_path: str,
                progress: Progress) -> int:
    from windowkit.spark import split_rejected  # pyspark only once a command runs

    totals: dict[str, int] = {}

    def write_batch(batch, batch_id: int) -> None:
        batch = batch.cache()
        frames, rejected = split_rejected(batch)
        frames.write.mode("append").parquet(frames_path)
        rejected.write.mode("append").parquet(rejected_path)
        counts = dict(batch.groupBy("status").count().collect())
        for k, v in counts.items():
            totals[k] = totals.get(k, 0) + v
        batch.unpersist()
        progress.step(f"micro-batch {batch_id}: {counts or 'no output'}")

    query = (result.writeStream.foreachBatch(write_batch)
             .option("checkpointLocation", args.checkpoint).start())
    progress.step(f"streaming {args.input} (checkpoint {args.checkpoint})")
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    progress.step(f"done: {totals}")
    print(f"frames:   {frames_path}\nrejected: {rejected_path}")
    return 0
