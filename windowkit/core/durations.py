"""Durations at the edge: ``"3 rows"``, ``"90 seconds"``, ``timedelta`` -> int64 microseconds.

Time inside the core is int64 microseconds since the epoch; user-facing strings and
``datetime.timedelta`` values are converted once, here.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Literal, get_args

DurationKind = Literal["rows", "time"]

TimeUnit = Literal["s", "ms", "us", "ns"]
"""What an integer time column counts since 1970: ``"s"``, ``"ms"``, ``"us"`` or ``"ns"``."""
#: The units of :data:`TimeUnit`, the one list the Spark layer, the CLI and pipelines accept.
TIME_UNITS: tuple[str, ...] = get_args(TimeUnit)

_UNITS_US = {
    "us": 1, "microsecond": 1, "microseconds": 1,
    "ms": 1_000, "millisecond": 1_000, "milliseconds": 1_000,
    "s": 1_000_000, "sec": 1_000_000, "secs": 1_000_000,
    "second": 1_000_000, "seconds": 1_000_000,
    "m": 60_000_000, "min": 60_000_000, "mins": 60_000_000,
    "minute": 60_000_000, "minutes": 60_000_000,
    "h": 3_600_000_000, "hour": 3_600_000_000, "hours": 3_600_000_000,
    "d": 86_400_000_000, "day": 86_400_000_000, "days": 86_400_000_000,
    "w": 604_800_000_000, "week": 604_800_000_000, "weeks": 604_800_000_000,
}
#: The time units a duration string may use, for error messages.
#: The first instant a Spark timestamp holds, 0001-01-01T00:00:00Z, in µs since the epoch.
FIRST_TIMESTAMP = -62_135_596_800_000_000
#: The last instant a Spark timestamp holds, 9999-12-31T23:59:59.999999Z, in µs.
LAST_TIMESTAMP = 253_402_300_799_999_999
ACCEPTED_UNITS = "us, ms, s, seconds, min, minutes, h, hours, d, days, w, weeks"
_ROW_UNITS = {"row", "rows", "tuple", "tuples", "report", "reports"}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*$")


@dataclass(frozen=True)
class Duration:
    """A length counted in rows (tuples) or in time (microseconds).

    Examples
    --------
    >>> Duration.parse("3 rows", "min_duration")
    Duration(kind='rows', amount=3)
    >>> Duration.parse("90 seconds", "min_duration")
    Duration(kind='time', amount=90000000)
    """

    kind: DurationKind
    amount: int

    @classmethod
    def parse(
        cls, value: str | int | dt.timedelta | Duration, name: str, *, allow_rows: bool = True
    ) -> Duration:
        """Parse ``value`` into a :class:`Duration`.

        Parameters
        ----------
        value : str, int, datetime.timedelta or Duration
            ``"3 rows"``, ``"90 seconds"``, ``"5 min"``, a ``timedelta``, or an int meaning rows.
        name : str
            The parameter's name, for the error message.
        allow_rows : bool
            Whether a row count is accepted.

        Returns
        -------
        Duration

        Examples
        --------
        >>> Duration.parse("1.5 minutes", "x").amount
        90000000
        >>> Duration.parse("1 week", "x").amount == 7 * 86_400_000_000
        True
        >>> Duration.parse("-3 rows", "min_duration")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: `min_duration` must be a positive duration like '3 rows' or '90 seconds' ...
        """
        if isinstance(value, Duration):
            result = value
        elif isinstance(value, dt.timedelta):
            result = cls("time", round(value.total_seconds() * 1_000_000))
        elif isinstance(value, int) and not isinstance(value, bool):
            result = cls("rows", value)
        elif isinstance(value, str) and (match := _PATTERN.match(value)):
            number, unit = float(match.group(1)), match.group(2).lower()
            if unit in _ROW_UNITS and number.is_integer():
                result = cls("rows", int(number))
            elif unit in _UNITS_US:
                result = cls("time", round(number * _UNITS_US[unit]))
            else:
                result = None
        else:
            result = None
        examples = "'3 rows' or '90 seconds'" if allow_rows else "'90 seconds'"
        if result is None or result.amount <= 0 or (result.kind == "rows" and not allow_rows):
            units = f"rows or {ACCEPTED_UNITS}" if allow_rows else ACCEPTED_UNITS
            msg = (f"`{name}` must be a positive duration like {examples} (units: {units}); "
                   f"got {value!r}")
            raise ValueError(msg)
        return result

    def __str__(self) -> str:
        if self.kind == "rows":
            return f"{self.amount} rows"
        return f"{self.amount / 1_000_000:g} seconds"


def to_micros(value: str | int | dt.timedelta, name: str) -> int:
    """Convert a time length to int64 microseconds (ints are taken as microseconds).

    Examples
    --------
    >>> to_micros("30 seconds", "slot")
    30000000
    >>> to_micros(dt.timedelta(minutes=1), "slot")
    60000000
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            msg = f"`{name}` must be a positive duration like '30 seconds'; got {value!r}"
            raise ValueError(msg)
        return value
    return Duration.parse(value, name, allow_rows=False).amount


def origin_micros(origin: str | dt.datetime | None) -> int:
    """The start of slot 0 in µs since 1970 (UTC); ``ValueError`` naming ``origin``.

    Examples
    --------
    >>> origin_micros("1970-01-05 00:00:00")  # the first Monday after the epoch
    345600000000
    """
    if origin is None:
        return 0
    import pandas as pd

    try:
        stamp = pd.Timestamp(origin)
    except (ValueError, TypeError) as exc:
        msg = f"`origin` must be a date-time like '2024-01-01 00:00:00'; got {origin!r}"
        raise ValueError(msg) from exc
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize("UTC")
    return int(stamp.value // 1000)
