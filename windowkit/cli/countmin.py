"""``windowkit countmin``: windowed Count-Min (DistCM) estimates or heavy hitters of a file.

Batch only: the input is read once, each of ``--shards`` sites keeps a windowed sketch of its
last ``--window`` items (or ticks), the coordinator merges the sites' latest matrices, and the
estimated window frequency of every distinct item (or, with ``--heavy-hitters PHI``, only the
items reaching ``PHI`` times the window count) is written as Parquet.
"""

from __future__ import annotations

import argparse

from windowkit.cli.common import Progress, add_io_arguments, read_input

ALGORITHM_CHOICES = ("splitter", "proportional", "simple", "perfect")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``countmin`` subcommand.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["countmin", "--input", "in", "--output", "out", "--item", "ip",
    ...                           "--window", "1000"])
    >>> args.algorithm, args.epsilon, args.func is run
    ('splitter', 0.001, True)
    """
    parser = subparsers.add_parser(
        "countmin",
        help="windowed Count-Min frequency estimates / heavy hitters (DistCM)",
        description=__doc__.splitlines()[0],
    )
    add_io_arguments(parser, stream=False)
    parser.add_argument("--item", required=True, help="item column")
    parser.add_argument("--time", default=None,
                        help="event-time column (default: input order, count-based only)")
    parser.add_argument("--by", default=None, help="site column (default: rows spread evenly)")
    parser.add_argument("--window", type=int, required=True,
                        help="window N per site, in samples or ticks")
    parser.add_argument("--unit", choices=("samples", "ticks"), default="samples")
    parser.add_argument("--tick", default=None, help="tick length with --unit ticks, '1 second'")
    parser.add_argument("--algorithm", choices=ALGORITHM_CHOICES, default="splitter")
    parser.add_argument("--epsilon", type=float, default=0.001)
    parser.add_argument("--delta", type=float, default=1 / 16)
    parser.add_argument("--shards", type=int, default=None,
                        help="number of DistCM sites (default: spark.sql.shuffle.partitions)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--heavy-hitters", type=float, default=None, metavar="PHI",
                        help="write only items whose estimate reaches PHI x window count")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``windowkit countmin``; return the exit code."""
    from pyspark.sql import functions as F

    from windowkit.spark.countmin import (
        estimate_frequency,
        heavy_hitters,
        make_operator,
        merge_count_min,
        windowed_count_min,
    )
    from windowkit.spark.session import windowkit_session

    if args.heavy_hitters is not None and not 0 < args.heavy_hitters <= 1:
        msg = f"`--heavy-hitters` must be in (0, 1]; got {args.heavy_hitters}"
        raise ValueError(msg)
    make_operator(args.window, unit=args.unit, tick=args.tick, algorithm=args.algorithm,
                  epsilon=args.epsilon, delta=args.delta, seed=args.seed)  # fail fast
    progress = Progress()
    progress.step("starting Spark")
    spark = windowkit_session(args.master, app_name="windowkit-countmin")
    df = read_input(spark, args)
    progress.step(f"sketching {args.input} ({args.algorithm}, N={args.window} {args.unit})")
    snaps = windowed_count_min(
        df, args.item, args.time, window=args.window, unit=args.unit, tick=args.tick,
        algorithm=args.algorithm, epsilon=args.epsilon, delta=args.delta, by=args.by,
        shards=args.shards, seed=args.seed,
    ).filter(F.col("rejected").isNull())
    snaps = snaps.localCheckpoint()  # the estimates below read the snapshots twice
    merged = merge_count_min(snaps).first()
    if merged is None:
        msg = f"`--input` {args.input} holds no row with a non-null `{args.item}`"
        raise ValueError(msg)
    progress.step(f"merged {merged['shards']} shards, {merged['n_seen']:,} samples, "
                  f"window count {merged['window_count']:,.0f}")
    items = df.select(args.item).dropna().distinct()
    if args.heavy_hitters is None:
        out = estimate_frequency(merged["sketch"], items, args.item)
    else:
        out = heavy_hitters(snaps, items, args.heavy_hitters, args.item, latest=True)
        out = out.select(args.item, "estimate", "window_count", "threshold")
    out.write.mode("overwrite").parquet(args.output)
    progress.step(f"wrote {args.output}")
    return 0
