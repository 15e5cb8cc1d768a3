"""``windowkit multigranular``: multi-granular sliding windows over files, batch or stream."""

from __future__ import annotations

import argparse
import functools
import operator
import os

from windowkit.cli import common
from windowkit.cli.common import Progress, add_io_arguments
from windowkit.core.multigranular import AGGREGATES, AggregatorConfig, MultiGranularSpec
from windowkit.core.multigranular.distinct import DEFAULT_PRECISION
from windowkit.core.multigranular.spec import CLOSED


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``multigranular`` subcommand.

    Examples
    --------
    >>> from windowkit.cli import build_parser
    >>> args = build_parser().parse_args(["multigranular", "--input", "in", "--time", "t",
    ...     "--value", "v", "--window", "RANGES 1 HOUR, 1 MINUTE SLIDES 5 MINUTES, 1 SECOND",
    ...     "--output", "out"])
    >>> args.aggregates, args.regression
    ('count,sum,mean,min,max', False)
    """
    p = subparsers.add_parser(
        "multigranular",
        help="many ranges and slides in one operator (multi-granular sliding windows)",
        description="Aggregates per --by key over every level of a multi-granular window "
                    "(Patroumpas & Sellis). Writes OUTPUT/reports, OUTPUT/rejected (malformed "
                    "rows) and with --recurring OUTPUT/recurring as Parquet. With --distinct COL "
                    "the reports get a column distinct_COL: the estimated number of distinct "
                    "COL values in each level's window (HyperLogLog sketches, exact up to a few "
                    "hundred values, then about 1.6% relative error at --distinct-precision "
                    "12).",
    )
    add_io_arguments(p)
    p.add_argument("--time", required=True, help="event-time column (timestamp)")
    common.add_by_argument(p, "key column (reports per key)")
    p.add_argument("--value", default=None, help="numeric column to aggregate")
    p.add_argument("--window", required=True,
                   help="e.g. 'RANGES 1 HOUR, 10 MINUTES, 1 MINUTE SLIDES 5 MINUTES, "
                        "1 MINUTE, 1 SECOND'")
    p.add_argument("--aggregates", default="count,sum,mean,min,max",
                   help=f"comma-separated, among {', '.join(AGGREGATES)}")
    p.add_argument("--regression", action="store_true", help="slope and intercept per level")
    p.add_argument("--weights", default=None, help="comma-separated weight per level (decay)")
    p.add_argument("--recurring", default=None, help="column whose recurring items to find")
    p.add_argument("--distinct", default=None,
                   help="column whose distinct values to count per level (reports get "
                        "distinct_COL), e.g. destinations per source")
    p.add_argument("--distinct-precision", type=int, default=DEFAULT_PRECISION,
                   help="lgConfigK of the distinct-count sketches, 4..21 (relative error "
                        "1.04/sqrt(2^N))")
    p.add_argument("--report", choices=("periodic", "continuous"), default="periodic",
                   help="periodic: each level reports when it slides; continuous: every "
                        "level reports at every slide of the finest level")
    p.add_argument("--closed", choices=CLOSED, default="left",
                   help="left: each level's windows are those of Spark's window(), [start, "
                        "end) on whole slides; right: the paper's (tc - range, tc] at each "
                        "slide instant tc")
    p.add_argument("--shards", type=int, default=None, help="Spark groups the keys share")
    p.add_argument("--plot", default=None, help="PNG: one key's values and each level's mean")
    p.set_defaults(handler=run)


def parse_weights(text: str | None) -> tuple[float, ...] | None:
    """``--weights``: comma-separated numbers, one per level.

    Examples
    --------
    >>> parse_weights("1, 0.5")
    (1.0, 0.5)
    >>> parse_weights("1,half")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `--weights` must be comma-separated numbers, one per level, ...; got '1,half'
    """
    if text is None:
        return None
    try:
        return tuple(float(w) for w in text.split(","))
    except ValueError as exc:
        msg = (f"`--weights` must be comma-separated numbers, one per level, e.g. '1,0.5'; "
               f"got {text!r}")
        raise ValueError(msg) from exc


def _config(args: argparse.Namespace) -> AggregatorConfig:
    weights = parse_weights(args.weights)
    return AggregatorConfig(MultiGranularSpec.parse(args.window),
                            tuple(a.strip() for a in args.aggregates.split(",") if a.strip()),
                            args.regression, weights, args.report, args.distinct is not None,
                            args.distinct_precision)


def run(args: argparse.Namespace) -> int:
    """Run the ``multigranular`` subcommand; return the exit code.

    Examples
    --------
    >>> from windowkit.cli import main
    >>> main(["multigranular", "--input", "x", "--time", "t", "--value", "v", "--output", "o",
    ...       "--window", "RANGES 1 HOUR, 1 MINUTE SLIDES 90 SECONDS, 1 MINUTE"])
    ... # doctest: +ELLIPSIS
    windowkit: error: level 1: slide 90 seconds must be a whole multiple of level 0's slide...
    2
    """
    config = _config(args)  # fail on bad parameters before Spark starts
    common.check_positive("shards", args.shards)
    common.check_stream_options(args)
    info = common.inspect_input(args.input, args.format)
    common.check_columns(info, time=args.time, by=args.by, value=args.value,
                         recurring=args.recurring, distinct=args.distinct)
    parts = ("reports", "rejected", "recurring") if args.recurring else ("reports", "rejected")
    common.check_output(args.output, args.overwrite, parts=parts)
    progress = Progress(quiet=getattr(args, "quiet", False))
    spark = common.start_spark(args, "windowkit multigranular", progress)
    from windowkit.spark import multi_granular, recurring_items, split_rejected

    df = common.read_input(spark, args, info)
    shared = {"by": args.by, "late": getattr(args, "late", None), "shards": args.shards,
              "time_unit": args.time_unit, "report": args.report, "closed": args.closed}
    result = multi_granular(df, args.time, args.window, value=args.value,
                            aggregates=config.aggregates, regression=args.regression,
                            weights=config.weights, distinct=args.distinct,
                            distinct_precision=config.distinct_precision, **shared)
    outputs = {"reports": result}
    if args.recurring:
        outputs["recurring"] = recurring_items(df, args.time, args.recurring, args.window,
                                               **shared)
    progress.step(f"windowing {args.input}")
    for name, out in outputs.items():
        # one query per output on a stream, each with its own checkpoint; rejected rows are
        # written once, from the reports
        run_args = argparse.Namespace(**vars(args))
        if df.isStreaming:
            run_args.checkpoint = os.path.join(args.checkpoint, name)

        def split(frame, name=name):
            good, bad = split_rejected(frame)
            return {name: good, "rejected": bad} if name == "reports" else {name: good}

        counts = common.write_outputs(out, run_args, split, progress, count_by="rejected")
        kept = counts.pop("None", 0)
        progress.step(f"{name}: {kept:,} rows; set aside: {common.summarize(counts)}")
    if args.plot and not df.isStreaming:
        _plot(spark, df, args, os.path.join(args.output, "reports"))
    for name in [*outputs, "rejected"]:
        print(f"{name}: {os.path.join(args.output, name)}")
    return 0


def _plot(spark, df, args: argparse.Namespace, reports_path: str) -> None:
    """One key's values and each level's aggregate over time, like the paper's Figure 3,
    drawn as the report draws its levels (legend: each level's range / slide)."""
    from pyspark.sql import functions as F

    from windowkit.report.collect import shown_key
    from windowkit.report.figures import subplots, to_png
    from windowkit.report.multigranular import PREFERRED, draw_levels, level_label

    reports = common.read_written(spark, reports_path, args.output_format)
    names = shown_key(args.by).names
    busiest = reports.groupBy(*names).count().orderBy(F.desc("count"), *names).first()
    same_key = functools.reduce(operator.and_, [F.col(name).eqNullSafe(busiest[name])
                                                for name in names])
    mine = reports.filter(same_key)
    series = mine.select("level", "range", "slide", F.unix_micros("window_end").alias("t"),
                         *[c for c in PREFERRED if c in mine.columns]).toPandas()
    column = "mean" if "mean" in series else next(c for c in PREFERRED if c in series)
    raw = df if args.by is None else df.filter(same_key)
    raw = raw.select(args.time, args.value).orderBy(args.time).limit(20_000).toPandas()
    lines = {level_label(g["range"].iloc[0], g["slide"].iloc[0]):
             g.sort_values("t").rename(columns={column: "value"})[["t", "value"]]
             for _, g in series.groupby("level")}
    fig, ax = subplots(height=4.0)
    ax.plot(raw[args.time], raw[args.value], ".", ms=2, alpha=0.3, color="grey", label="rows")
    draw_levels(ax, lines, f"{column} of {args.value}",
                ", ".join(f"{name} = {busiest[name]}" for name in names))
    with open(args.plot, "wb") as out:
        out.write(to_png(fig))
