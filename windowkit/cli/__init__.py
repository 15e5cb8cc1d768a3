"""The ``windowkit`` command: one subcommand per technique, ``demo`` and ``run``.

Each subcommand's module exposes ``register(subparsers)``, which adds its subcommand and sets
``func`` (taking the parsed arguments, returning an exit code). The techniques' modules are
named by their descriptors (:mod:`windowkit.techniques`).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from windowkit.techniques import cli_modules

#: The subcommands that belong to no technique.
TOOL_MODULES = ("windowkit.cli.demo", "windowkit.cli.run")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every installed subcommand.

    Examples
    --------
    >>> "frames" in build_parser().format_help()
    True
    """
    parser = argparse.ArgumentParser(
        prog="windowkit",
        description="Data-driven and sketch-based windows on Apache Spark (local mode by "
                    "default; --master for a cluster).",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in (*cli_modules(), *TOOL_MODULES):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``windowkit`` command.

    A user's mistake (a bad parameter, path, column, expression or output location) prints one
    line and returns 2; any other failure prints one line and returns 1. ``--verbose`` shows
    Spark's log and the full traceback instead.

    Examples
    --------
    >>> main(["frames", "--min-duration", "-1 rows", "--input", "x", "--time", "t",
    ...       "--when", "v > 1", "--output", "o"])  # doctest: +ELLIPSIS
    windowkit: error: `min_duration` must be a positive duration like '3 rows' or ...
    2
    """
    args = build_parser().parse_args(argv)
    verbose = getattr(args, "verbose", False)
    if not verbose:
        quiet_python_logs()
    try:
        check_spark_target(args)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if verbose:
            raise
        code, message = describe_error(exc)
        print(f"windowkit: error: {message}", file=sys.stdout if argv is not None else sys.stderr)
        return code


def check_spark_target(args: argparse.Namespace) -> None:
    """Check ``--master`` and ``--remote`` before anything runs; an ``sc://`` master becomes
    the remote.

    Examples
    --------
    >>> args = argparse.Namespace(master="sc://localhost:15002", remote=None)
    >>> check_spark_target(args)
    >>> args.master, args.remote
    (None, 'sc://localhost:15002')
    """
    from windowkit.cli.spark_urls import spark_target

    if hasattr(args, "master"):
        args.master, args.remote = spark_target(args.master, getattr(args, "remote", None))


def describe_error(exc: BaseException) -> tuple[int, str]:
    """The exit code and the one line a failure is reported with.

    Examples
    --------
    >>> describe_error(ValueError("`shards` must be an integer in [1, inf); got 0"))
    (2, '`shards` must be an integer in [1, inf); got 0')
    >>> describe_error(RuntimeError("boom\\nat line 2"))
    (1, 'boom (run with --verbose for the details)')
    """
    user_errors = ("AnalysisException", "ParseException", "IllegalArgumentException",
                   "NumberFormatException", "DateTimeException", "SparkUpgradeException")
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = _one_line(exc)
    if isinstance(exc, ValueError) or names & set(user_errors):
        return 2, text
    if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
        return 2, text
    return 1, f"{text} (run with --verbose for the details)"


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    # Spark's messages carry the query text and JVM frames after their first line
    first = text.splitlines()[0] if text else type(exc).__name__
    return first.replace("\\n", " ").strip()


def quiet_python_logs() -> None:
    """Keep PySpark's own error logs and Python warnings out of the command's output."""
    import logging
    import warnings

    for name in ("py4j", "pyspark", "DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore")


if __name__ == "__main__":
    sys.exit(main())
