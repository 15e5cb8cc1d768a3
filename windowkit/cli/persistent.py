"""``windowkit persistent``: persistent items of a file or a stream of files (issue 4)."""

from __future__ import annotations

import argparse
import os

from windowkit.cli.common import (
    Progress,
    add_io_arguments,
    check_columns,
    check_output,
    check_positive,
    check_stream_options,
    inspect_input,
    read_input,
    read_written,
    start_spark,
    summarize,
    write_split,
)
from windowkit.cli.time_check import (
    add_time_check_arguments,
    check_time_tolerance,
    warn_time_outliers,
)
from windowkit.core.sketch_defaults import DEFAULT_PERSISTENCE_DELTA


def register(subparsers) -> None:
    """Add the ``persistent`` subcommand to ``subparsers``.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["persistent", "--input", "in", "--output", "out",
    ...                           "--item", "ip", "--time", "t", "--window-slots", "288"])
    >>> args.window_slots, args.slot, args.alpha, args.epsilon, args.handler is run
    (288, '30 seconds', 0.5, None, True)
    """
    parser = subparsers.add_parser(
        "persistent",
        help="items seen in at least an alpha fraction of the slots of a window",
        description="Report the items that appear in at least alpha * window-slots of the "
                    "window's timeslots (sliding windows ending at every slot, or tumbling "
                    "windows with --fixed), with the persistent-items sketch, or exactly with "
                    "--exact (batch only). Output: OUTPUT/persistent (window_end_slot, "
                    "window_start, window_end, the item, estimate: the exact persistence with "
                    "--exact) and OUTPUT/rejected (status and the row as JSON in detail).",
    )
    add_io_arguments(parser)
    parser.add_argument("--item", required=True, help="item column (e.g. a source IP)")
    parser.add_argument("--time", required=True, help="event-time column")
    parser.add_argument("--slot", default="30 seconds", help="timeslot length")
    parser.add_argument("--window-slots", type=int, default=100, help="window length in slots")
    parser.add_argument("--alpha", type=float, default=0.5, help="persistence threshold (0, 1]")
    parser.add_argument("--epsilon", type=float, default=None,
                        help="uncertainty in (0, alpha): lower = more exact, more memory "
                             "(default alpha / 2)")
    parser.add_argument("--delta", type=float, default=DEFAULT_PERSISTENCE_DELTA,
                        help="probability of missing a persistent item in a window, in (0, 1): "
                             "ceil(ln(1/delta) / 2) sketch instances run (3 for 0.01; one "
                             "instance misses with probability up to e^-2, about 0.135)")
    parser.add_argument("--fixed", action="store_true", help="tumbling instead of sliding")
    parser.add_argument("--origin", default=None,
                        help="start of slot 0, e.g. '2024-01-01' (default 1970-01-01 UTC, "
                             "so '1 week' slots start on Thursdays)")
    parser.add_argument("--exact", action="store_true",
                        help="exact persistence in Spark SQL instead of the sketch (batch)")
    parser.add_argument("--shards", type=int, default=None, help="Spark groups of items")
    parser.add_argument("--seed", type=int, default=0, help="hash seed of the sketch")
    parser.add_argument("--plot", default=None, metavar="PNG",
                        help="also write a heatmap of the most persistent items over the "
                             "windows (batch)")
    parser.add_argument("--plot-items", type=int, default=30,
                        help="items in the --plot heatmap (those reported in most windows)")
    add_time_check_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; parameters, input and output are checked before Spark starts.

    Examples
    --------
    >>> args = argparse.Namespace(slot="30 seconds", window_slots=100, alpha=0.5,
    ...                           epsilon=0.7, delta=None, seed=0, exact=False, stream=False)
    >>> run(args)
    Traceback (most recent call last):
    ...
    ValueError: `epsilon` must be smaller than `alpha`; got epsilon=0.7, alpha=0.5
    """
    epsilon = args.alpha / 2 if args.epsilon is None else args.epsilon
    _check_parameters(args, epsilon)
    info = inspect_input(args.input, args.format)
    check_columns(info, item=args.item, time=args.time)
    check_output(args.output, args.overwrite, parts=("persistent", "rejected"))
    progress = Progress(quiet=getattr(args, "quiet", False))
    spark = start_spark(args, "windowkit persistent", progress)
    from pyspark.sql import functions as F

    from windowkit.spark.persistent import exact_persistent_items, persistent_items

    df = read_input(spark, args, info)
    common = {"item": args.item, "time": args.time, "slot": args.slot,
              "window_slots": args.window_slots, "alpha": args.alpha,
              "sliding": not args.fixed, "time_unit": args.time_unit, "origin": args.origin}
    function = "exact_persistent_items" if args.exact else "persistent_items"
    warn_time_outliers(df, function, common, quiet=args.quiet,
                       tolerance=args.time_tolerance)
    if args.exact:
        progress.step("exact persistence (Spark SQL)")
        result = exact_persistent_items(df, **common)
        # the sketch's schema: the exact persistence is the estimate, as a double
        result = result.withColumn("persistence", F.col("persistence").cast("double")
                                   ).withColumnRenamed("persistence", "estimate")
    else:
        progress.step("persistent-items sketch" + (" (streaming)" if args.stream else ""))
        result = persistent_items(df, **common, epsilon=epsilon, delta=args.delta,
                                  shards=args.shards, late=getattr(args, "late", None),
                                  seed=args.seed)
    counts = write_split(result, args, ("persistent", "rejected"), progress, kept="status")
    progress.step(f"wrote {args.output}: {summarize(counts)}")
    print(f"persistent: {os.path.join(args.output, 'persistent')}\n"
          f"rejected:   {os.path.join(args.output, 'rejected')}")
    if not args.exact:
        print(guarantee(args.alpha, epsilon, args.window_slots, args.delta))
    if args.plot:
        written = read_written(spark, os.path.join(args.output, "persistent"),
                               args.output_format)
        _plot_top_items(written, args.plot, item=args.item, value="estimate",
                        window_slots=args.window_slots, top=args.plot_items)
        progress.step(f"plotted {args.plot}")
    return 0


def guarantee(alpha: float, epsilon: float, window_slots: int, delta: float | None) -> str:
    """The sketch's guarantee for these parameters, in one line.

    Examples
    --------
    >>> guarantee(0.5, 0.25, 100, 0.01)  # doctest: +NORMALIZE_WHITESPACE
    "guarantee: an item in at least 50 of a window's 100 slots (alpha 0.5) is missed with
    probability at most 0.01 (3 sketch instances); one in fewer than 25 is never reported
    (alpha - epsilon)"
    """
    from windowkit.core.persistence import PersistenceConfig

    config = PersistenceConfig(alpha=alpha, epsilon=epsilon, n=window_slots, delta=delta)
    miss = f"{delta:g}" if delta is not None else "e^-2 (about 0.135)"
    plural = "s" if config.instances > 1 else ""
    return (f"guarantee: an item in at least {alpha * window_slots:g} of a window's "
            f"{window_slots} slots (alpha {alpha:g}) is missed with probability at most {miss} "
            f"({config.instances} sketch instance{plural}); one in fewer than "
            f"{config.min_count} is never reported (alpha - epsilon)")


def _check_parameters(args: argparse.Namespace, epsilon: float) -> None:
    from windowkit.core.durations import to_micros
    from windowkit.core.persistence import PersistenceConfig
    from windowkit.core.validation import check_in_range, check_int

    to_micros(args.slot, "slot")
    check_int("window_slots", args.window_slots, 1)
    if args.exact:
        check_in_range("alpha", args.alpha, 0, 1, low_open=True)
        if args.stream:
            msg = "`--exact` works on batch input only; drop `--stream`"
            raise ValueError(msg)
    else:
        PersistenceConfig(alpha=args.alpha, epsilon=epsilon, n=args.window_slots,
                          delta=args.delta, seed=args.seed)
    check_positive("shards", getattr(args, "shards", None))
    if getattr(args, "plot", None):
        check_int("plot_items", args.plot_items, 1)
        if args.stream:
            msg = "`--plot` works on batch input only; drop `--stream`"
            raise ValueError(msg)
    if getattr(args, "origin", None) is not None:
        from windowkit.core.durations import origin_micros

        origin_micros(args.origin)
    check_stream_options(args)
    check_time_tolerance(args)


def _plot_top_items(written, path: str, *, item: str, value: str, window_slots: int,
                    top: int) -> str:
    """Plot the ``top`` items reported in most windows of ``written`` (a Spark DataFrame).

    Only those items' rows leave Spark, so the plot costs little whatever the output's size.
    """
    from pyspark.sql import functions as F

    from windowkit.plots import plot_persistence

    reported = written.where(F.col("window_end_slot").isNotNull())
    chosen = (reported.groupBy(item).agg(F.count("*").alias("_n"), F.sum(value).alias("_v"))
              .orderBy(F.desc("_n"), F.desc("_v"), F.col(item)).limit(top).select(item))
    rows = (reported.join(chosen, item)
            .select("window_end_slot", "window_end", item, value).toPandas())
    return plot_persistence(rows, path, item=item, value=value, window_slots=window_slots,
                            top=top)
