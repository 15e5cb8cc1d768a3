"""Parameter checks that raise ``ValueError`` naming the parameter, its value and the range."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any


def check_in_range(
    name: str,
    value: float,
    low: float,
    high: float,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Check that ``value`` lies in the interval from ``low`` to ``high``.

    Parameters
    ----------
    name : str
        The parameter's name, shown in the error.
    value : float
        The value to check.
    low, high : float
        The bounds (``math.inf`` for none).
    low_open, high_open : bool
        Whether each bound is excluded.

    Returns
    -------
    float
        ``value``, so the check can be used inline.

    Examples
    --------
    >>> check_in_range("epsilon", 0.01, 0, 1, low_open=True, high_open=True)
    0.01
    >>> check_in_range("epsilon", 1.5, 0, 1, low_open=True, high_open=True)
    Traceback (most recent call last):
    ...
    ValueError: `epsilon` must be in (0, 1); got 1.5
    """
    bad = not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value)
    if not bad:
        bad = value < low or value > high or (low_open and value == low)
        bad = bad or (high_open and value == high)
    if bad:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        msg = f"`{name}` must be in {left}{_fmt(low)}, {_fmt(high)}{right}; got {value!r}"
        raise ValueError(msg)
    return value


def check_int(name: str, value: Any, low: int, high: float = math.inf) -> int:
    """Check that ``value`` is an integer with ``low <= value <= high``.

    Examples
    --------
    >>> check_int("window", 10, 1)
    10
    >>> check_int("window", 0, 1)
    Traceback (most recent call last):
    ...
    ValueError: `window` must be an integer in [1, inf); got 0
    """
    ok = isinstance(value, int) and not isinstance(value, bool)
    if hasattr(value, "__index__") and not isinstance(value, bool):
        ok = True
        value = int(value)
    if not ok or value < low or value > high:
        right = ")" if high == math.inf else "]"
        msg = f"`{name}` must be an integer in [{_fmt(low)}, {_fmt(high)}{right}; got {value!r}"
        raise ValueError(msg)
    return int(value)


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """Check that ``value`` is one of ``choices``.

    Examples
    --------
    >>> check_choice("missing", "satisfying", ("satisfying", "unsatisfied"))
    'satisfying'
    >>> check_choice("missing", "maybe", ("satisfying", "unsatisfied"))
    Traceback (most recent call last):
    ...
    ValueError: `missing` must be one of 'satisfying', 'unsatisfied'; got 'maybe'
    """
    choices = tuple(choices)
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        msg = f"`{name}` must be one of {listed}; got {value!r}"
        raise ValueError(msg)
    return value


def _fmt(x: float) -> str:
    if x == math.inf:
        return "inf"
    if x == -math.inf:
        return "-inf"
    return f"{x:g}" if isinstance(x, float) else str(x)
