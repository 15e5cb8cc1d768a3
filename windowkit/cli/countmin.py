"""``windowkit countmin``: windowed Count-Min (DistCM) estimates or heavy hitters of a file.

Batch: the input is read once; ``--shards`` sites each sketch their rows over the global window
(the last ``--window`` items, or ticks), the coordinator merges the sites' matrices, and the
estimated window frequency of every distinct item (or, with ``--heavy-hitters PHI``, only the
items reaching ``PHI`` times the window count) is written to OUTPUT/estimates (or
OUTPUT/heavy_hitters). Every input row is accounted for: counted, or written to OUTPUT/rejected
with its reason (null item, missing or unparsable time, late), and the counts are printed.

Stream (``--stream --checkpoint DIR``): each micro-batch's snapshots go to OUTPUT/snapshots and
its rejected rows to OUTPUT/rejected, exactly once per micro-batch;
``merge_count_min(spark.read.parquet("OUTPUT/snapshots"))`` is the latest view.
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
    check_positive,
    check_stream_options,
    claim_output,
    claim_output_part,
    inspect_input,
    read_input,
    start_spark,
    summarize,
    write_outputs,
)
from windowkit.cli.time_check import (
    add_time_check_arguments,
    check_time_tolerance,
    warn_time_outliers,
)
from windowkit.core.sketch_defaults import DEFAULT_DELTA, DEFAULT_EPSILON

ALGORITHM_CHOICES = ("splitter", "proportional", "simple", "perfect")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``countmin`` subcommand.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["countmin", "--input", "in", "--output", "out", "--item", "ip",
    ...                           "--window", "1000"])
    >>> args.algorithm, args.epsilon, args.delta, args.snapshot_every, args.handler is run
    ('splitter', 0.01, 0.25, None, True)
    """
    parser = subparsers.add_parser(
        "countmin",
        help="windowed Count-Min frequency estimates / heavy hitters (DistCM)",
        description="Windowed Count-Min (DistCM) estimates of how often each item occurred "
                    "in the last --window rows (or ticks) of the input, or with "
                    "--heavy-hitters its heavy hitters. Writes OUTPUT/estimates (or "
                    "OUTPUT/heavy_hitters; a stream: OUTPUT/snapshots) and OUTPUT/rejected.",
    )
    add_io_arguments(parser, stream=True)
    parser.add_argument("--item", required=True, help="item column")
    parser.add_argument("--time", default=None,
                        help="order or event-time column: with --unit samples an integer "
                             "sequence number (or a time, ranked; batch only), default the "
                             "input order; with --unit ticks the event time (required)")
    add_by_argument(parser, "site column routing rows to shards (default: spread evenly); the "
                            "window stays the whole stream's")
    parser.add_argument("--window", type=int, required=True,
                        help="window N of the whole stream, in samples or ticks")
    parser.add_argument("--unit", choices=("samples", "ticks"), default="samples",
                        help="what --window counts: rows (samples) or --tick periods of --time "
                             "(ticks)")
    parser.add_argument("--tick", default=None, help="tick length with --unit ticks, '1 day'")
    parser.add_argument("--algorithm", choices=ALGORITHM_CHOICES, default="splitter",
                        help="how expired rows leave the window's counters: splitter (sub-cells "
                             "that decay), proportional, simple (one or two window blocks) or "
                             "perfect (exact, every row of the window kept)")
    parser.add_argument("--epsilon", type=float, default=DEFAULT_EPSILON,
                        help="relative error of the estimates, in (0, 1): e/epsilon counters "
                             "per row of the sketch")
    parser.add_argument("--delta", type=float, default=DEFAULT_DELTA,
                        help="probability that an estimate exceeds the error bound, in (0, 1): "
                             "log2(1/delta) rows of counters")
    parser.add_argument("--shards", type=int, default=None,
                        help="number of DistCM sites (default 4 on every machine)")
    parser.add_argument("--snapshot-every", type=int, default=None, metavar="S",
                        help="also snapshot every S samples per site (the paper's DistCM "
                             "cadence is ceil(epsilon N)); default: at the end of the input "
                             "or of each micro-batch")
    parser.add_argument("--seed", type=int, default=0,
                        help="hash seed of the sketches, 0 to 2147483647")
    parser.add_argument("--heavy-hitters", type=float, default=None, metavar="PHI",
                        help="write only items whose estimate reaches PHI x window count")
    add_time_check_arguments(parser)
    parser.set_defaults(handler=run)


def _check(args: argparse.Namespace):
    """Every check that needs no Spark; returns the input's :class:`InputInfo`."""
    from windowkit.spark.countmin import make_operator

    if args.heavy_hitters is not None and not 0 < args.heavy_hitters <= 1:
        msg = f"`--heavy-hitters` must be in (0, 1]; got {args.heavy_hitters}"
        raise ValueError(msg)
    if args.heavy_hitters is not None and getattr(args, "stream", False):
        msg = "`--heavy-hitters` is for batch runs; a stream writes snapshots (see --help)"
        raise ValueError(msg)
    if args.unit == "ticks" and args.time is None:
        msg = "`--time` is required with `--unit ticks`"
        raise ValueError(msg)
    check_positive("shards", args.shards)
    check_positive("window", args.window)
    check_positive("snapshot_every", args.snapshot_every)
    make_operator(args.window, unit=args.unit, tick=args.tick, algorithm=args.algorithm,
                  epsilon=args.epsilon, delta=args.delta, seed=args.seed)
    check_stream_options(args)
    check_time_tolerance(args)
    info = inspect_input(args.input, args.format)
    check_columns(info, item=args.item, time=args.time, by=args.by)
    results = "snapshots" if getattr(args, "stream", False) else \
        "estimates" if args.heavy_hitters is None else "heavy_hitters"
    check_output(args.output, args.overwrite, parts=(results, "rejected"))
    return info


def run(args: argparse.Namespace) -> int:
    """Run ``windowkit countmin``; return the exit code."""
    info = _check(args)
    progress = Progress(quiet=getattr(args, "quiet", False))
    spark = start_spark(args, "windowkit countmin", progress)
    from pyspark.sql import functions as F

    from windowkit.spark.countmin import windowed_count_min

    df = read_input(spark, args, info)
    streaming = getattr(args, "stream", False)
    params = {"item": args.item, "time": args.time, "window": args.window, "unit": args.unit,
              "tick": args.tick, "algorithm": args.algorithm, "epsilon": args.epsilon,
              "delta": args.delta, "by": args.by, "shards": args.shards,
              "snapshot_every": args.snapshot_every, "seed": args.seed,
              "late": args.late if streaming else None, "time_unit": args.time_unit}
    # warned before the sketching job, which the first write below runs
    warn_time_outliers(df, "windowed_count_min", params, quiet=args.quiet,
                       tolerance=args.time_tolerance)
    snaps = windowed_count_min(df, **params)
    snaps = snaps.withColumn("status", _status(F, args.item))
    progress.step(f"sketching {args.input} ({args.algorithm}, N={args.window} {args.unit})")
    if streaming:
        counts = write_outputs(snaps, args, _split_stream, progress)
        progress.step(f"done: {summarize(counts)}")
        print(f"snapshots: {os.path.join(args.output, 'snapshots')}\n"
              f"rejected:  {os.path.join(args.output, 'rejected')}")
        return 0
    return _run_batch(snaps, df, args, progress)


def _status(F, item: str):
    """``snapshot``, or why a row was set aside: ``null item``, ``no valid time``, ``late``."""
    value = F.get_json_object(F.col("detail"), "$['" + item.replace("'", "\\'") + "']")
    return (F.when(F.col("rejected").isNull(), F.lit("snapshot"))
            .when(F.col("rejected") == "late", F.lit("late"))
            .when(value.isNull(), F.lit("null item"))
            .otherwise(F.lit("no valid time")))


def _split_stream(batch):
    from pyspark.sql import functions as F

    good = batch.filter(F.col("rejected").isNull()).drop("rejected", "detail", "status")
    bad = batch.filter(F.col("rejected").isNotNull()).select(
        "shard", F.col("status").alias("reason"), "detail")
    return {"snapshots": good, "rejected": bad}


def _run_batch(snaps, df, args: argparse.Namespace, progress: Progress) -> int:
    from pyspark.sql import functions as F

    from windowkit.spark.countmin import (
        estimate_frequency,
        heavy_hitters,
        latest_snapshots,
        merge_count_min,
    )
    from windowkit.spark.sinks import write_frame

    snaps = snaps.localCheckpoint()  # read several times below; the sketching runs once
    claim_output(args.output)
    rejected = snaps.filter(F.col("rejected").isNotNull())
    write_frame(rejected.select("shard", F.col("status").alias("reason"), "detail"),
                claim_output_part(args.output, "rejected"), args.output_format)
    reasons = {r["status"]: r["count"] for r in rejected.groupBy("status").count().collect()}
    good = snaps.filter(F.col("rejected").isNull())
    counted = latest_snapshots(good).agg(F.sum("n_seen")).first()[0] or 0
    merged = merge_count_min(good).first()
    items = df.select(args.item).dropna().distinct()
    if merged is None or counted == 0:
        name = "estimates"
        out = items.withColumn("estimate", F.lit(None).cast("long")).limit(0)
    elif args.heavy_hitters is None:
        name = "estimates"
        out = estimate_frequency(merged["sketch"], items, args.item)
    else:
        name = "heavy_hitters"
        out = heavy_hitters(good, items, args.heavy_hitters, args.item, latest=True)
        out = out.select(args.item, "estimate", "window_count", "threshold")
    if merged is not None:  # the window estimated, beside every estimate
        out = out.withColumns({c: F.lit(merged[c]) for c in ("window_start", "window_end")})
    write_frame(out, claim_output_part(args.output, name), args.output_format)
    if merged is not None:
        progress.step(f"merged {merged['shards']} shards, window count "
                      f"{merged['window_count']:,.0f} in [{merged['window_start']}, "
                      f"{merged['window_end']})")
    set_aside = sum(reasons.values())
    detail = f" ({summarize(reasons)})" if reasons else ""
    print(f"rows: {counted + set_aside:,} read, {counted:,} counted, {set_aside:,} set aside"
          f"{detail}")
    print(f"{name + ':':10s} {os.path.join(args.output, name)}\n"
          f"rejected:  {os.path.join(args.output, 'rejected')}")
    return 0
