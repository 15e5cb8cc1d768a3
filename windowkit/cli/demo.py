"""``windowkit demo``: the router example end to end on generated data."""

from __future__ import annotations

import argparse
import os

import pandas as pd

from windowkit.cli.common import Progress

THRESHOLD = 0.003


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand.

    Examples
    --------
    >>> from windowkit.cli import build_parser
    >>> build_parser().parse_args(["demo"]).routers
    50
    """
    p = subparsers.add_parser(
        "demo",
        help="router loss-rate demo: threshold frames on generated data, Parquet and a plot",
    )
    p.add_argument("--output", default="out/demo", help="output directory")
    p.add_argument("--routers", type=int, default=50, help="number of routers")
    p.add_argument("--duration", default="1 day", help="length of the generated day")
    p.add_argument("--seed", type=int, default=0, help="dataset seed")
    p.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    p.add_argument("--verbose", action="store_true", help="show Spark's log and tracebacks")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Generate router readings, frame them on Spark, write Parquet and a PNG plot."""
    from windowkit.datasets.routers import router_incidents, router_readings

    progress = Progress()
    os.makedirs(args.output, exist_ok=True)
    progress.step(f"generating {args.routers} routers x {args.duration} of 30 s loss_rate "
                  "reports (2% missing, 1% out of order)")
    readings = router_readings(n_routers=args.routers, duration=args.duration, seed=args.seed)
    incidents = router_incidents(n_routers=args.routers, duration=args.duration, seed=args.seed)
    input_path = os.path.join(args.output, "input", "readings.parquet")
    os.makedirs(os.path.dirname(input_path), exist_ok=True)
    readings.astype({"time": "datetime64[us, UTC]"}).to_parquet(input_path, index=False)

    from windowkit.spark import split_rejected, threshold_frames, windowkit_session

    progress.step(f"starting Spark ({args.master or 'local[*]'})")
    spark = windowkit_session(args.master, app_name="windowkit demo", quiet=not args.verbose)
    df = spark.read.parquet(input_path)
    progress.step("framing: loss_rate > 0.3% for at least 3 reports, schedule 30 s, "
                  "missing reports bridged inside high-loss periods")
    result = threshold_frames(df, "time", f"loss_rate > {THRESHOLD}", by="router",
                              min_duration="3 rows", schedule="30 seconds",
                              missing="satisfying", fragment_every="20 rows").cache()
    frames, rejected = split_rejected(result)
    frames_path = os.path.join(args.output, "frames")
    frames.write.mode("overwrite").parquet(frames_path)
    rejected.write.mode("overwrite").parquet(os.path.join(args.output, "rejected"))
    final = frames.filter("status = 'final'").toPandas()
    for col in ("start", "end", "last"):  # toPandas gives naive times in the session's UTC
        final[col] = pd.to_datetime(final[col], utc=True)
    found, total = _incidents_found(final, incidents)
    progress.step(f"{len(final)} final frames; {found} of the {total} injected high-loss "
                  "incidents of 3+ reports overlap a frame (the others lost an edge report)")
    router = final["router"].value_counts().index[0]
    from windowkit.plots import plot_frames

    png = plot_frames(readings[readings["router"] == router], final[final["router"] == router],
                      os.path.join(args.output, f"frames_{router}.png"), threshold=THRESHOLD,
                      title=f"router {router}: loss_rate with its high-loss frames shaded")
    print(f"input:  {input_path}\nframes: {frames_path} (Parquet)\nplot:   {png}")
    return 0


def _incidents_found(final: pd.DataFrame, incidents: pd.DataFrame) -> tuple[int, int]:
    long_ones = incidents[incidents["n_reports"] >= 3]
    merged = long_ones.merge(final[["router", "start", "end"]], on="router",
                             suffixes=("", "_f"))
    overlap = (merged["start_f"] < merged["end"]) & (merged["end_f"] > merged["start"])
    hit = merged[overlap].groupby(["router", "start"]).size()
    return len(hit), len(long_ones)
