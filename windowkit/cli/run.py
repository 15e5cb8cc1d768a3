"""``windowkit run PIPELINE.toml``: one file says what to read, compute and write; run it."""

from __future__ import annotations

import argparse
import os

from windowkit.cli.spark_urls import DEFAULT_MASTER


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``run`` subcommand.

    Examples
    --------
    >>> from windowkit.cli import build_parser
    >>> args = build_parser().parse_args(["run", "p.toml", "--stream"])
    >>> args.pipeline, args.stream, args.master
    ('p.toml', True, None)
    """
    p = subparsers.add_parser(
        "run",
        help="run a pipeline file: sources, windowkit steps, sinks, and an HTML report",
        description="Run the pipeline PIPELINE (TOML): read its sources, run its steps in "
                    "order, write each step's rows to OUTPUT/STEP, every rejected row to "
                    "OUTPUT/rejected and the report to OUTPUT/report.html. The file is checked "
                    "before Spark starts.",
    )
    p.add_argument("pipeline", help="the pipeline file (TOML)")
    p.add_argument("--output", default=None, help="output directory instead of the file's")
    p.add_argument("--check", action="store_true",
                   help="only check the file and its inputs; do not start Spark")
    add_run_arguments(p, f"the file's [pipeline] master or remote, else {DEFAULT_MASTER}")
    p.add_argument("--quiet", action="store_true",
                   help="print no warning (of a step's newest time far beyond the others)")
    p.set_defaults(handler=run)


def add_run_arguments(parser: argparse.ArgumentParser, default_master: str) -> None:
    """The options of a command that runs a pipeline: where, batch or stream, and how loud.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_run_arguments(p, "local[*]")
    >>> vars(p.parse_args(["--stream"]))
    {'master': None, 'remote': None, 'stream': True, 'overwrite': False, 'verbose': False}
    """
    from windowkit.cli.common import add_spark_arguments

    add_spark_arguments(parser, default_master)
    parser.add_argument("--stream", action="store_true",
                        help="read the sources as streams: each step is a Structured Streaming "
                             "query with a checkpoint, written exactly once per micro-batch")
    parser.add_argument("--overwrite", action="store_true",
                        help="allow an output directory that holds files windowkit did not "
                             "write")
    parser.add_argument("--verbose", action="store_true",
                        help="show Spark's log and tracebacks")


def run(args: argparse.Namespace) -> int:
    """Check the pipeline file, run it, write the report; return the exit code."""
    from windowkit.cli.common import Progress
    from windowkit.pipeline.runner import check_pipeline_inputs
    from windowkit.pipeline.spec import load_pipeline

    pipeline = load_pipeline(args.pipeline, output=args.output)
    remote = args.remote if args.master or args.remote else pipeline.remote
    infos = check_pipeline_inputs(pipeline, overwrite=args.overwrite, stream=args.stream,
                                  remote=remote)
    if args.check:
        print(f"{args.pipeline}: {len(pipeline.sources)} sources and {len(pipeline.steps)} "
              "steps checked")
        return 0
    progress = Progress(quiet=getattr(args, "quiet", False))
    summary = run_checked(pipeline, infos, args, progress)
    print(f"results: {pipeline.output}/<step> for "
          f"{', '.join(s.name for s in summary.steps)}\n"
          f"rejected: {summary.rejected_path}")
    if pipeline.report:
        print(f"report: {os.path.join(pipeline.output, pipeline.report)}")
    return 0


def run_checked(pipeline, infos, args: argparse.Namespace, progress):
    """Start Spark and run an already checked pipeline (``args``: the command's ``master``,
    ``remote``, ``stream``, ``verbose`` and ``quiet``, no warnings); write its report; return
    its summary."""
    from windowkit.pipeline.progress import status_conf
    from windowkit.pipeline.runner import PipelineRun
    from windowkit.spark.session import windowkit_session

    # the command line says where Spark runs, else the file does
    master, remote = (args.master, args.remote) if args.master or args.remote else (
        pipeline.master, pipeline.remote)
    progress.step(f"starting Spark ({remote or master or DEFAULT_MASTER})")
    spark = windowkit_session(master, app_name=f"windowkit {pipeline.name}",
                              quiet=not args.verbose, remote=remote,
                              extra_conf=status_conf(remote))
    summary = PipelineRun(spark, pipeline, infos, stream=args.stream, progress=progress,
                          quiet=getattr(args, "quiet", False)).run()
    if pipeline.report:
        from windowkit.cli.ownership import FILE, check_part, record_part
        from windowkit.report import write_report

        progress.step("writing the report")
        check_part(pipeline.output, pipeline.report, FILE)
        write_report(summary, os.path.join(pipeline.output, pipeline.report))
        record_part(pipeline.output, pipeline.report, FILE)
    progress.step(f"done: {len(summary.steps)} steps")
    return summary
