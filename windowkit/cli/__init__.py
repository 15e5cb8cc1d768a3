"""The ``windowkit`` command: one subcommand per technique, ``demo`` and ``run``.

Each subcommand's module exposes ``register(subparsers)``, which adds its subcommand and sets
``handler`` (taking the parsed arguments, returning an exit code). The techniques' modules are
named by their descriptors (:mod:`windowkit.techniques`); a module is named after its
subcommand, so that a command imports only its own subcommand's module (and the engine code it
needs) before its checks run.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys

from windowkit.cli.parser import CommandParser, command_parser, name_flags, option_flags
from windowkit.techniques import cli_modules

#: The subcommands that belong to no technique.
TOOL_MODULES = ("windowkit.cli.demo", "windowkit.cli.run")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser with every installed subcommand, or only with the one ``argv``
    names.

    Examples
    --------
    >>> "frames" in build_parser().format_help()
    True
    >>> "multigranular" in build_parser(["fill", "--help"]).format_help()
    False
    """
    parser = CommandParser(
        prog="windowkit",
        description="Data-driven and sketch-based windows on Apache Spark (local mode by "
                    "default; --master for a cluster).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    subparsers = parser.add_subparsers(dest="command", required=True,
                                       parser_class=CommandParser)
    for name in subcommand_modules(argv):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(subparsers)
    return parser


def subcommand_modules(argv: list[str] | None) -> tuple[str, ...]:
    """The modules of the subcommands to register: the one ``argv`` names, else all.

    Examples
    --------
    >>> subcommand_modules(["--verbose"])[-2:]
    ('windowkit.cli.demo', 'windowkit.cli.run')
    >>> subcommand_modules(["frames", "--when", "x > 1"])
    ('windowkit.cli.frames',)
    """
    every = (*cli_modules(), *TOOL_MODULES)
    # the command's own options come after the subcommand; before it, flags take no value
    named = next((a for a in argv or () if not a.startswith("-")), None)
    chosen = tuple(m for m in every if m.rpartition(".")[2] == named)
    return chosen or every


def version() -> str:
    """windowkit's version, from the installed package's metadata.

    Examples
    --------
    >>> version() == importlib.metadata.version("windowkit")
    True
    """
    try:
        return importlib.metadata.version("windowkit")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``windowkit`` command.

    A user's mistake (a bad parameter, path, column, expression or output location) prints one
    line and returns 2; any other failure prints one line and returns 1. ``--verbose`` shows
    Spark's log and the full traceback instead.

    Examples
    --------
    >>> main(["countmin", "--input", "x", "--item", "ip", "--window", "7", "--unit", "ticks",
    ...       "--time", "t", "--output", "o"])  # doctest: +ELLIPSIS
    windowkit: error: `--tick` is required with --unit ticks ...
    2
    """
    stream = sys.stdout if argv is not None else sys.stderr
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    verbose = getattr(args, "verbose", False)
    if not verbose:
        quiet_python_logs()
    try:
        check_spark_target(args)
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if verbose:
            raise
        code, message = describe_error(exc)
        if code == 2:
            message = user_words(message, exc, command_parser(parser, args))
        print(f"windowkit: error: {message}", file=stream)
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


def user_words(message: str, exc: BaseException,
               parser: argparse.ArgumentParser | None) -> str:
    """A windowkit error's ``message`` with the Python parameters it names written as the
    subcommand's options (``parser``'s); messages that already name options, and Spark's, are
    left as they are (their backticked names are columns).

    Examples
    --------
    >>> p = build_parser()
    >>> frames = command_parser(p, argparse.Namespace(command="frames"))
    >>> user_words("`min_duration` must be positive", ValueError(), frames)
    '`--min-duration` must be positive'
    """
    # a pipeline file's errors name its keys, which are the functions' parameters
    pipeline = sys.modules.get("windowkit.pipeline.spec")
    if pipeline is not None and isinstance(exc, pipeline.PipelineError):
        return message
    spark = any(cls.__module__.startswith("pyspark") for cls in type(exc).__mro__)
    if parser is None or spark or "`--" in message:
        return message
    return name_flags(message, option_flags(parser))


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
