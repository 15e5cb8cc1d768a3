"""Parameters of progressive window widening (PWW), validated once."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from windowkit.core.durations import to_micros
from windowkit.core.validation import check_choice, check_int

ReportMode = Literal["first", "all"]
"""``"first"``: a match is reported once, at its first detection; ``"all"``: in every window."""

#: Most levels a configuration may ask for (d0 * 2**62 would overflow int64 microseconds).
MAX_LEVELS = 48


@dataclass(frozen=True)
class WideningConfig:
    """Validated parameters of :class:`~windowkit.core.widening.WindowWidening`.

    Level ``k`` (``0 <= k < levels``) cuts each key's stream into batches
    ``[b * d_k, (b + 1) * d_k)`` with ``d_k = base * 2**k`` (aligned on the epoch); a level-k
    window is two consecutive batches, ``[b * d_k, (b + 2) * d_k)``. A level-(k+1) batch is two
    level-k batches, of which only the first and the last ``max_length`` rows are kept when it
    holds more than ``2 * max_length`` (Algorithm 2).

    Parameters
    ----------
    base : int
        Base batch duration ``d0`` in microseconds.
    max_length : int
        ``L``: the most rows of a key a pattern may span.
    levels : int
        Number of levels ``K + 1``; with ``max_duration`` ``T``, ``K = ceil(log2(T / d0))``,
        the smallest ``K`` with ``d0 * 2**K >= T`` (a level-K window then covers any interval of
        duration at most ``T``: Lemma 1).
    report : {"first", "all"}
        Report a match once at its first detection (default), or in every window that finds it.
    base_chunks : bool
        If True (default), a level-0 window holding more than ``4 * max_length`` rows (the
        base batch was too long for Theorem 2's assumption) is given to the detector in pieces
        of ``4 * max_length`` rows starting every ``2 * max_length`` rows, so that no window
        exceeds ``4 L`` rows while every run of at most ``L`` rows still lies in one piece.

    Examples
    --------
    >>> c = WideningConfig.create(base="1 second", max_length=32, max_duration="100 seconds")
    >>> c.base, c.levels, c.level_duration(c.levels - 1)
    (1000000, 8, 128000000)
    >>> WideningConfig.create(base="1 second", max_length=0, levels=3)
    Traceback (most recent call last):
    ...
    ValueError: `max_length` must be an integer in [1, inf); got 0
    """

    base: int
    max_length: int
    levels: int
    report: ReportMode = "first"
    base_chunks: bool = True

    def __post_init__(self) -> None:
        check_int("base", self.base, 1)
        check_int("max_length", self.max_length, 1)
        check_int("levels", self.levels, 1, MAX_LEVELS)
        check_choice("report", self.report, ("first", "all"))
        if self.base * 2 ** (self.levels + 1) >= 2**62:
            msg = (f"`levels` must keep base * 2**(levels + 1) within int64 microseconds; got "
                   f"levels={self.levels} with base={self.base}")
            raise ValueError(msg)
        if not isinstance(self.base_chunks, bool):
            msg = f"`base_chunks` must be True or False; got {self.base_chunks!r}"
            raise ValueError(msg)

    @classmethod
    def create(
        cls,
        base: str | int | dt.timedelta = "1 second",
        max_length: int = 32,
        max_duration: str | int | dt.timedelta | None = None,
        levels: int | None = None,
        report: ReportMode = "first",
        base_chunks: bool = True,
    ) -> WideningConfig:
        """Parse user-facing values: durations as ``"90 seconds"``, timedeltas or µs.

        Exactly one of ``max_duration`` and ``levels`` must be given.

        Examples
        --------
        >>> WideningConfig.create(base=10, max_length=4, max_duration=10).levels
        1
        >>> WideningConfig.create(base=10, max_length=4, max_duration=11).levels
        2
        >>> WideningConfig.create(base=10, max_length=4)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: exactly one of `max_duration` and `levels` must be given; got neither
        """
        d0 = to_micros(base, "base")
        if (max_duration is None) == (levels is None):
            which = "neither" if levels is None else "both"
            msg = f"exactly one of `max_duration` and `levels` must be given; got {which}"
            raise ValueError(msg)
        if max_duration is not None:
            t = to_micros(max_duration, "max_duration")
            levels = levels_for(d0, t)
        return cls(base=d0, max_length=max_length, levels=levels, report=report,
                   base_chunks=base_chunks)

    def level_duration(self, level: int) -> int:
        """Batch duration ``d_k = base * 2**k`` of a level, in microseconds.

        Examples
        --------
        >>> WideningConfig(base=5, max_length=2, levels=3).level_duration(2)
        20
        """
        return self.base << level

    @property
    def max_duration(self) -> int:
        """The longest pattern duration every level together covers: ``d_K``.

        Examples
        --------
        >>> WideningConfig(base=5, max_length=2, levels=3).max_duration
        20
        """
        return self.level_duration(self.levels - 1)

    @property
    def max_window_rows(self) -> int:
        """``4 L``: the most rows a window holds (Algorithm 2).

        Examples
        --------
        >>> WideningConfig(base=5, max_length=2, levels=3).max_window_rows
        8
        """
        return 4 * self.max_length


def levels_for(base: int, max_duration: int) -> int:
    """``K + 1`` with ``K = ceil(log2(T / d0))`` (0 if ``T <= d0``), in exact integer arithmetic.

    Examples
    --------
    >>> levels_for(1, 1), levels_for(1, 2), levels_for(1, 3), levels_for(64, 100_000)
    (1, 2, 3, 12)
    """
    k = 0
    while base << k < max_duration:
        k += 1
    return k + 1


def theorem2_bound(config: WideningConfig, duration: int) -> float:
    """Theorem 2's bound on the rows one key gives the detector while its rows span
    ``duration`` µs (from its first row's time to its last).

    Each level-k window holds at most ``4 L`` rows (with base batches of at most ``2 L`` rows,
    the theorem's assumption) and level-k windows start every ``d_k``, so at most
    ``duration / d_k + 3`` of them hold a row of the span. Summed over the levels this is at
    most ``4 L (2 duration / d0 + 3 levels)``: per unit of time, the constant ``8 L / d0``.

    Examples
    --------
    >>> theorem2_bound(WideningConfig(base=10, max_length=2, levels=2), 100)
    168.0
    """
    total = 0.0
    for k in range(config.levels):
        total += config.max_window_rows * (duration / config.level_duration(k) + 3)
    return total
