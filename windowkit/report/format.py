"""How the report writes numbers, durations and a pipeline file's parameters."""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

_STEPS_US = ((86_400_000_000, "d"), (3_600_000_000, "h"), (60_000_000, "min"),
             (1_000_000, "s"), (1_000, "ms"), (1, "µs"))


def duration_micros(value: float | dt.timedelta) -> float:
    """A duration in microseconds, from microseconds or a timedelta (how a Spark day-time
    interval such as a multi-granular level's ``range`` comes to Python).

    Examples
    --------
    >>> duration_micros(dt.timedelta(minutes=1)), duration_micros(5)
    (60000000, 5)
    """
    if isinstance(value, dt.timedelta):
        return value // dt.timedelta(microseconds=1)
    return value


def format_duration(micros: float | None) -> str:
    """A duration in microseconds, in the largest unit it fills, three significant digits.

    Parameters
    ----------
    micros : float, timedelta or None
        The duration (µs, or a timedelta); None (nothing measured) gives ``"–"``.

    Returns
    -------
    str

    Examples
    --------
    >>> format_duration(90_000_000), format_duration(2_500), format_duration(0)
    ('1.5 min', '2.5 ms', '0 s')
    >>> format_duration(None), format_duration(7 * 86_400_000_000)
    ('–', '7 d')
    >>> format_duration(dt.timedelta(minutes=10))
    '10 min'

    """
    if micros is None or (isinstance(micros, float) and math.isnan(micros)):
        return "–"
    micros = duration_micros(micros)
    if micros == 0:
        return "0 s"
    size = abs(micros)
    for per, unit in _STEPS_US:
        if size >= per:
            return f"{_significant(micros / per)} {unit}"
    return f"{_significant(micros)} µs"


def format_seconds(seconds: float | None) -> str:
    """Wall-clock seconds, as :func:`format_duration` writes them.

    Examples
    --------
    >>> format_seconds(12.34), format_seconds(None)
    ('12.3 s', '–')
    """
    return format_duration(None if seconds is None else seconds * 1_000_000)


def format_number(value: float | None) -> str:
    """A count with thousands separators, or a real number to three significant digits.

    Examples
    --------
    >>> format_number(1234567), format_number(0.012345), format_number(None)
    ('1,234,567', '0.0123', '–')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if float(value).is_integer() and abs(value) < 2**53:
        return f"{int(value):,}"
    return _significant(float(value))


def format_param(value: Any) -> str:
    """A parameter as the pipeline file gave it: strings as they are, the rest as JSON.

    Examples
    --------
    >>> format_param("loss_rate > 0.003"), format_param(["1 minute", "1 hour"])
    ('loss_rate > 0.003', '["1 minute", "1 hour"]')
    >>> format_param(True), format_param(None)
    ('true', 'null')
    """
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _significant(x: float) -> str:
    text = f"{x:.3g}"
    if "e" in text:  # 3 significant digits of a large number: write it out
        return f"{x:,.0f}"
    return text
