"""The far-future time check of the subcommands whose batch result is the latest window.

``windowkit countmin --unit ticks`` and ``windowkit persistent`` (sliding windows) end their
windows at the input's newest row: before sketching, they run
:func:`windowkit.spark.check_time_outliers` and print its one-line warning on stderr, unless
``--quiet``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO


def add_time_check_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--quiet`` and ``--time-tolerance``.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_time_check_arguments(p)
    >>> vars(p.parse_args(["--time-tolerance", "2 days"]))
    {'quiet': False, 'time_tolerance': '2 days'}
    """
    parser.add_argument("--quiet", action="store_true",
                        help="print no warning (of a newest time far beyond the others)")
    parser.add_argument("--time-tolerance", default=None, metavar="DURATION",
                        help="warn when the newest time lies more than this after 99.9%% of "
                             "the times (default: the window's length)")


def check_time_tolerance(args: argparse.Namespace) -> None:
    """Raise ``ValueError`` naming ``--time-tolerance`` unless it is a duration (or absent).

    Examples
    --------
    >>> check_time_tolerance(argparse.Namespace(time_tolerance="soon"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `--time-tolerance` ...
    """
    from windowkit.core.durations import to_micros

    if getattr(args, "time_tolerance", None) is not None:
        to_micros(args.time_tolerance, "--time-tolerance")


def warn_time_outliers(df, function: str, params: dict[str, Any], *, quiet: bool = False,
                       tolerance: str | None = None, where: str = "",
                       stream: TextIO | None = None):
    """Print the warning of :func:`~windowkit.spark.check_time_outliers` for a batch call of
    ``function`` with ``params`` whose result ends at the newest row (nothing otherwise, on a
    stream, or when ``quiet``), after ``where`` (e.g. ``"step 'cm': "``); return what was
    found, or None.

    Examples
    --------
    >>> warn_time_outliers(None, "threshold_frames", {"time": "t", "when": "x > 1"}) is None
    True
    """
    from windowkit.spark.time_outliers import check_time_outliers, outlier_check_of

    if quiet:
        return None  # not even the check's Spark job
    check = outlier_check_of(function, params)
    if check is None or df.isStreaming:
        return None
    found = check_time_outliers(df, **check, tolerance=tolerance)
    if found is not None:
        print(f"windowkit: {where}{found.message()}", file=stream or sys.stderr, flush=True)
    return found
