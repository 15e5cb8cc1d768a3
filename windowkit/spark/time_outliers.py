"""Far-future event times: does a batch's newest time lie far beyond the rest of its times?

Some results end where the input's newest row is: the batch sketch of
:func:`~windowkit.spark.windowed_count_min` with ``unit="ticks"`` is the window of the last
``window`` ticks before the newest row, and the sliding windows of
:func:`~windowkit.spark.persistent_items` and :func:`~windowkit.spark.exact_persistent_items`
run up to the newest row's slot. One row dated 9999-12-31 then moves that window to year 9999,
where it holds that row alone, and nothing in the result says so. Other results are not moved
by such a row: frames, multi-granular windows, recurring items and widening report every
window of each key, and a far-future row only adds windows of its own.

The functions themselves stay lazy; :func:`check_time_outliers` is the check, a call of its
own, and :func:`outlier_check_of` says which calls need it and with which window. The
``windowkit`` subcommands and pipeline steps concerned print :meth:`TimeOutliers.message`.
"""

from __future__ import annotations

import datetime as dt
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from windowkit.core.durations import origin_micros, to_micros
from windowkit.core.validation import check_in_range, check_int
from windowkit.report.format import format_duration
from windowkit.spark.columns import resolve_column
from windowkit.spark.event_time import EventTime, TimeUnit, event_time
from windowkit.techniques import step_functions

DEFAULT_QUANTILE = 0.999
"""The share of rows whose times the newest time is compared with."""

#: ``percentile_approx``'s accuracy: the quantile's rank is within ``rows / 10,000``.
_ACCURACY = 10_000


@dataclass(frozen=True)
class TimeOutliers:
    """A batch whose newest time lies more than ``tolerance`` after the ``quantile`` of its
    times (all times in µs since 1970).

    Attributes
    ----------
    column : str
        The time column's name (an expression's as Spark names it, e.g.
        ``timestamp_seconds(s)``).
    newest : int
        The newest time.
    percentile : int
        The ``quantile`` of the times (approximate: its rank is within 0.01% of the rows).
    quantile : float
        The share of rows at or before ``percentile``.
    window, tolerance : int
        The window's length and the gap allowed after ``percentile`` (µs).
    rows : int
        The rows that have a time.
    in_window : int
        The rows in the last window: the window that ends with the newest row's slot.
    clock : EventTime
        How the column maps to µs (to write the times in the column's own kind).
    """

    column: str
    newest: int
    percentile: int
    quantile: float
    window: int
    tolerance: int
    rows: int
    in_window: int
    clock: EventTime

    def message(self) -> str:
        """The one-line warning the command line prints.

        Examples
        --------
        >>> df = spark.createDataFrame([(1,)], "t long")
        >>> found = TimeOutliers("t", 10**18, 60_000_000, 0.999, 60_000_000, 60_000_000,
        ...                      3000, 1, event_time(df, "t", "s"))
        >>> found.message()  # doctest: +ELLIPSIS
        'warning: the newest time of `t` (1000000000000 s) lies 317 centuries after 99.9% ...'
        """
        gap = self.newest - self.percentile
        return (f"warning: the newest time of `{self.column}` "
                f"({_written(self.newest, self.clock)}) lies {_span(gap)} after "
                f"{self.quantile:.1%} of the {self.rows:,} rows "
                f"({_written(self.percentile, self.clock)}): the last window "
                f"({format_duration(self.window)}) holds {self.in_window:,} of them; filter the "
                f"far-future rows out, or allow a larger tolerance "
                f"(now {format_duration(self.tolerance)})")


def check_time_outliers(
    df: DataFrame,
    time: str | Column,
    window: str | int | dt.timedelta,
    *,
    time_unit: TimeUnit | None = None,
    tolerance: str | int | dt.timedelta | None = None,
    quantile: float = DEFAULT_QUANTILE,
    slot: str | int | dt.timedelta | None = None,
    origin: str | dt.datetime | None = None,
) -> TimeOutliers | None:
    """Whether ``df``'s newest time lies far beyond the rest: the newest row would then be
    alone in a window that ends with it.

    One aggregation over ``df`` (the approximate ``quantile`` of the times, the newest time
    and the count of rows with a time). Only when the newest time lies more than ``tolerance``
    after that quantile, a count of the rows in the last window follows (a Parquet scan of a
    plain time column skips the row groups before that window by their statistics).

    Parameters
    ----------
    df : DataFrame
        A batch DataFrame.
    time : str or Column
        The event time, a column name or an expression of ``df``'s columns: timestamp,
        ``timestamp_ntz``, date, timestamp string, or an integer with ``time_unit`` (as every
        windowkit function reads it); rows without a time are left out.
    window : str, int or timedelta
        The window's length (``"7 days"``, a ``timedelta`` or µs); a whole number of
        ``slot``.
    time_unit : {"s", "ms", "us", "ns"}, optional
        The unit of an integer ``time`` column.
    tolerance : str, int or timedelta, optional
        How far after the ``quantile`` of the times the newest time may lie (default:
        ``window``).
    quantile : float
        In (0, 1): the share of the rows the newest time is compared with (default 0.999).
    slot : str, int or timedelta, optional
        Windows made of whole slots (Count-Min's ``tick``, persistent items' ``slot``): the
        last window is then the ``window / slot`` slots ending with the newest row's slot.
        Default one microsecond: the window ``(newest - window, newest]``.
    origin : str or datetime, optional
        Where slot 0 starts (default 1970-01-01 00:00 UTC), as for persistent items.

    Returns
    -------
    TimeOutliers or None
        What was found, or None if the newest time is within ``tolerance`` (or no row has a
        time).

    Raises
    ------
    ValueError
        On a bad parameter (naming it), or a streaming ``df``.

    Examples
    --------
    3,000 rows over a week and one row dated 9999-12-31:

    >>> days = spark.range(3000).select((F.col("id") % 7 * 86400).alias("s"))
    >>> df = days.union(spark.createDataFrame([(253402214400,)], "s long"))
    >>> found = check_time_outliers(df, "s", "1 day", time_unit="s")
    >>> found.in_window, found.rows
    (1, 3001)
    >>> check_time_outliers(days, "s", "1 day", time_unit="s") is None
    True
    >>> check_time_outliers(df, F.timestamp_seconds("s"), "1 day").column
    'timestamp_seconds(s)'
    """
    if df.isStreaming:
        msg = ("`df` must be a batch DataFrame: a stream's watermark decides its windows, "
               "not its newest row")
        raise ValueError(msg)
    window_us = to_micros(window, "window")
    slot_us = 1 if slot is None else to_micros(slot, "slot")
    if window_us % slot_us:
        msg = (f"`window` must be a whole number of slots ({slot_us} µs); got {window_us} µs")
        raise ValueError(msg)
    tolerance_us = window_us if tolerance is None else to_micros(tolerance, "tolerance")
    check_in_range("quantile", quantile, 0, 1, low_open=True, high_open=True)
    origin_us = origin_micros(origin)
    name = resolve_column(df, time, "time").name  # Spark's error for a name df lacks
    clock = event_time(df, time, time_unit)
    micros = clock.micros()
    stats = df.agg(F.percentile_approx(micros, float(quantile), _ACCURACY).alias("p"),
                   F.max(micros).alias("newest"), F.count(micros).alias("rows")).first()
    if not stats["rows"] or stats["newest"] - stats["p"] <= tolerance_us:
        return None
    newest = int(stats["newest"])
    first_slot = (newest - origin_us) // slot_us - window_us // slot_us + 1
    cutoff = origin_us + first_slot * slot_us
    in_window = micros >= F.lit(cutoff)
    pushed = clock.at_least(cutoff)
    recent = df.filter(in_window if pushed is None else pushed & in_window).count()
    return TimeOutliers(name, newest, int(stats["p"]), float(quantile), window_us,
                        tolerance_us, int(stats["rows"]), int(recent), clock)


#: The calls whose batch result ends at the newest row: function -> its module, and the
#: parameters giving the window's number of slots and the slot.
def outlier_check_of(function: str, params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The keyword arguments of :func:`check_time_outliers` for a call of the windowkit
    function ``function`` with keyword parameters ``params`` (the function's defaults fill
    in the others), or None when its batch result does not end at the newest row.

    Those calls are :func:`~windowkit.spark.windowed_count_min` with ``unit="ticks"`` (the
    last ``window`` ticks) and the sliding windows of
    :func:`~windowkit.spark.persistent_items` and
    :func:`~windowkit.spark.exact_persistent_items` (``window_slots`` slots).

    Examples
    --------
    >>> outlier_check_of("windowed_count_min", {"item": "ip", "time": "ts", "window": 7,
    ...                  "unit": "ticks", "tick": "1 day"})["window"] // 86_400_000_000
    7
    >>> outlier_check_of("windowed_count_min", {"item": "ip", "window": 7}) is None
    True
    >>> outlier_check_of("threshold_frames", {"time": "ts", "when": "x > 1"}) is None
    True
    """
    declared = step_functions().get(function)
    if declared is None or declared.latest_window is None:
        return None
    count, length = declared.latest_window
    call = declared.callable()
    bound = inspect.signature(call).bind_partial(**params)
    bound.apply_defaults()
    args = bound.arguments
    if args.get("unit", "ticks") != "ticks" or not args.get("sliding", True):
        return None
    slot = to_micros(args[length], length)
    return {"time": args["time"], "window": check_int(count, args[count], 1) * slot,
            "slot": slot, "time_unit": args.get("time_unit"), "origin": args.get("origin")}


def _written(micros: int, clock: EventTime) -> str:
    """A time as its column holds it: an integer in its unit, else the date and time (UTC)."""
    if clock.kind == "integer":
        value = micros * 1000 if clock.unit == "ns" else -(-micros // _PER_UNIT[clock.unit])
        return f"{value} {clock.unit}"
    try:
        return str(dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros))
    except OverflowError:  # beyond year 9999
        return f"{micros} µs after 1970"


_PER_UNIT = {"s": 1_000_000, "ms": 1_000, "us": 1}
_YEAR_US = 365.25 * 86_400_000_000


def _span(micros: int) -> str:
    """A gap in the largest unit it fills, centuries and years included."""
    if micros >= 100 * _YEAR_US:
        return f"{micros / (100 * _YEAR_US):.3g} centuries"
    if micros >= _YEAR_US:
        return f"{micros / _YEAR_US:.3g} years"
    return format_duration(micros)
