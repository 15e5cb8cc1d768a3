"""``windowkit demo``: a generated network day through all five techniques, with its report.

Writes the day's tables under ``OUTPUT/data``, a copy of the shipped pipeline file as
``OUTPUT/network_day.toml`` (edit it and rerun it with ``windowkit run``), runs it, and prints
how many of the injected cases each step found, and where the results and the report are.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from importlib import resources

from windowkit.cli.common import Progress, check_output, claim_output
from windowkit.cli.ownership import FILE, record_part
from windowkit.cli.run import add_run_arguments
from windowkit.cli.spark_urls import DEFAULT_MASTER

PIPELINE = "network_day.toml"
DATA = "data"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand.

    Examples
    --------
    >>> from windowkit.cli import build_parser
    >>> args = build_parser().parse_args(["demo"])
    >>> args.hours, args.output
    (24.0, 'out/demo')
    """
    p = subparsers.add_parser(
        "demo",
        help="a generated network day through all five techniques, with an HTML report",
        description="Generate a network day, run the shipped pipeline network_day.toml on "
                    "it (a copy is written to OUTPUT, to edit and rerun with windowkit run), "
                    "print how many of the injected cases each step found and write the "
                    "report to OUTPUT/results/report.html.",
    )
    p.add_argument("--output", default="out/demo", help="output directory")
    p.add_argument("--hours", type=float, default=24.0, help="length of the generated day")
    p.add_argument("--size", choices=("full", "small"), default="full",
                   help="small: a 5-hour day with a few thousand rows per table, every kind "
                        "of case still in it (a quick look; --hours is ignored)")
    p.add_argument("--seed", type=int, default=0, help="dataset seed")
    add_run_arguments(p, DEFAULT_MASTER)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Generate the day, run the shipped pipeline on it, print what was found and where."""
    from windowkit.cli.run import run_checked
    from windowkit.datasets.network_day import SMALL_DAY, network_day, write_network_day
    from windowkit.datasets.network_day_score import score_network_day
    from windowkit.pipeline.runner import check_pipeline_inputs
    from windowkit.pipeline.spec import load_pipeline

    check_output(args.output, args.overwrite, parts=[(DATA, FILE), (PIPELINE, FILE)])
    progress = Progress(quiet=getattr(args, "quiet", False))
    shape = {**SMALL_DAY, "seed": args.seed} if args.size == "small" else {
        "hours": args.hours, "seed": args.seed}
    progress.step(f"generating a {shape['hours']:g}-hour network day (seed {args.seed})")
    day = network_day(**shape)
    claim_output(args.output)
    paths = write_network_day(os.path.join(args.output, DATA), day)
    rows = {name: len(getattr(day, name)) for name in ("routers", "bgp", "flows", "syscalls")}
    progress.step("wrote " + ", ".join(f"{n:,} {name}" for name, n in rows.items())
                  + f" rows under {os.path.dirname(paths['routers'])}")
    pipeline_file = os.path.join(args.output, PIPELINE)
    with resources.as_file(resources.files("windowkit.pipelines") / PIPELINE) as shipped:
        shutil.copyfile(shipped, pipeline_file)
    for path in [*paths.values(), pipeline_file]:
        record_part(args.output, os.path.relpath(path, args.output), FILE)
    pipeline = load_pipeline(pipeline_file)
    infos = check_pipeline_inputs(pipeline, overwrite=args.overwrite, stream=args.stream)
    summary = run_checked(pipeline, infos, args, progress)
    # the run's time stops as its steps and sinks end: the rest is the report's
    total = time.perf_counter() - progress.t0
    for line in score_network_day(pipeline.output, day):
        print(line)
    print(f"pipeline: {pipeline_file}  (rerun: windowkit run {pipeline_file})\n"
          f"results:  {pipeline.output}/<step> ({', '.join(s.name for s in summary.steps)})\n"
          f"rejected: {summary.rejected_path}")
    if pipeline.report:
        print(f"report:   {os.path.join(pipeline.output, pipeline.report)}  (written in "
              f"{total - summary.elapsed_s:.1f} s of the demo's {total:.1f} s)")
    return 0
