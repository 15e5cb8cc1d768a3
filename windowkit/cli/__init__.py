"""The ``windowkit`` command: ``demo``, and one subcommand per technique.

Each technique's module in this package exposes ``register(subparsers)``, which adds its
subcommand and sets ``func`` (taking the parsed arguments, returning an exit code).
"""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMAND_MODULES = ("windowkit.cli.frames", "windowkit.cli.demo", "windowkit.cli.countmin",
                      "windowkit.cli.persistent", "windowkit.cli.widen",
                      "windowkit.cli.multigranular")


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
    for name in SUBCOMMAND_MODULES:
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

    Examples
    --------
    >>> main(["frames", "--min-duration", "-1 rows", "--input", "x", "--time", "t",
    ...       "--when", "v > 1", "--output", "o"])  # doctest: +ELLIPSIS
    windowkit: error: `min_duration` must be a positive duration like '3 rows' or ...
    2
    """
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:
        print(f"windowkit: error: {exc}", file=sys.stdout if argv is not None else sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
