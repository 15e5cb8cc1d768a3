"""The multi-granular window specification: levels of (range, slide), an origin, scopes.

The paper's clause ``RANGES 1 HOUR, 10 MINUTES, 1 MINUTE SLIDES 5 MINUTES, 1 MINUTE, 1 SECOND``
lists the widest level first; level 0 is the finest (``RANGE 1 MINUTE SLIDE 1 SECOND``). The
Python form lists levels finest first: ``[("1 minute", "1 second"), ("10 minutes", "1 minute"),
("1 hour", "5 minutes")]``.

Rules (the paper's ``w_(k-1) < w_k``, ``b_(k-1) <= b_k`` and ``w_k = u_k b_k``): ranges strictly
increase with the level, every range is a whole multiple of its slide, and slides never
decrease. We also require every slide to be a
whole multiple of the previous level's slide (the paper's optional ``b_k = l_k * b_{k-1}``):
then every level slides whenever a coarser one does, granules nest, and each level's report can
be built from the finer level's report at the same instant. Specifications that break it are
refused with the rule they break.

Time is int64 microseconds; the time domain is the paper's discrete instants, one per
microsecond. Two conventions say which instants a window holds (``closed``):

- ``"left"`` (the default), Spark's ``window()``: level ``k``'s windows are ``[s, s + w_k)``
  with ``s - t0`` a whole multiple of ``b_k`` (``t0`` only aligns them, like ``window()``'s
  ``startTime``; no row is before it).
- ``"right"``, the paper's scope: at an instant ``tc`` where level ``k`` slides
  (``(tc - t0) mod b_k = 0``) it is the closed interval ``[max(t0, tc - w_k + 1), tc]``, i.e.
  ``(tc - w_k, tc]``; rows before ``t0`` belong to no scope.

Both are reported as half-open ``[window_start, window_end)``. ``window()``'s windows are the
paper's scopes one microsecond later (``[s, s + w)`` is ``(s - 1, s + w - 1]``), so one
stairwise chain serves both: :meth:`MultiGranularSpec.chain` is the paper's specification the
chain runs on times moved by :attr:`MultiGranularSpec.shift`, with an origin before every
timestamp Spark can hold.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from windowkit.core.durations import FIRST_TIMESTAMP, origin_micros, to_micros
from windowkit.core.validation import check_choice

_CLAUSE = re.compile(r"^\s*\[?\s*RANGES?\s+(?P<ranges>.+?)\s+SLIDES?\s+(?P<slides>.+?)\s*\]?\s*$",
                     re.IGNORECASE | re.DOTALL)
#: Upper bound on the finest granules one key's chain may span (memory guard).
MAX_CELLS_PER_KEY = 1 << 20
#: Which end of a window is closed: ``"left"`` like ``window()``, ``"right"`` like the paper.
CLOSED = ("left", "right")


@dataclass(frozen=True)
class Level:
    """One level: its range ``w`` and slide ``b``, in microseconds.

    Examples
    --------
    >>> Level(60_000_000, 1_000_000).granules
    60
    """

    range: int
    slide: int

    @property
    def granules(self) -> int:
        """``u_k = w_k / b_k``: the number of granules the level's range spans."""
        return self.range // self.slide


def _format_us(us: int) -> str:
    for unit, size in (("weeks", 604_800_000_000), ("days", 86_400_000_000),
                       ("hours", 3_600_000_000), ("minutes", 60_000_000),
                       ("seconds", 1_000_000), ("ms", 1_000)):
        if us % size == 0:
            return f"{us // size} {unit}"
    return f"{us} us"


@dataclass(frozen=True)
class MultiGranularSpec:
    """Validated levels (finest first) and origin ``t0`` of a multi-granular window.

    Parameters
    ----------
    levels : tuple of Level
        Level 0 first (smallest range).
    origin : int
        ``t0`` in microseconds since the epoch (default 0: windows start, or with
        ``closed="right"`` report instants fall, on whole multiples of each slide from the
        epoch, like Spark's ``window()``).
    closed : {"left", "right"}
        ``"left"`` (default): windows ``[s, s + range)`` like ``window()``; ``"right"``: the
        paper's scopes ``(tc - range, tc]``, and rows before ``t0`` belong to no scope.

    Examples
    --------
    >>> spec = MultiGranularSpec.parse(
    ...     "RANGES 1 HOUR, 10 MINUTES, 1 MINUTE SLIDES 5 MINUTES, 1 MINUTE, 1 SECOND")
    >>> [(lv.range // 1_000_000, lv.slide // 1_000_000) for lv in spec.levels]
    [(60, 1), (600, 60), (3600, 300)]
    >>> spec.scope(2, 3_600_000_000 + 6)  # closed bounds of [0 s, 3600 s), microseconds
    (0, 3599999999)
    """

    levels: tuple[Level, ...]
    origin: int = 0
    closed: str = "left"

    def __post_init__(self) -> None:
        check_choice("closed", self.closed, CLOSED)
        if not isinstance(self.levels, tuple) or not self.levels:
            msg = f"`levels` must be a non-empty tuple of levels; got {self.levels!r}"
            raise ValueError(msg)
        if isinstance(self.origin, bool) or not isinstance(self.origin, int):
            msg = f"`origin` must be an int of microseconds; got {self.origin!r}"
            raise ValueError(msg)
        for k, lv in enumerate(self.levels):
            if lv.range <= 0 or lv.slide <= 0:
                msg = f"level {k}: range and slide must be positive; got range {lv.range} us, " \
                      f"slide {lv.slide} us"
                raise ValueError(msg)
            if lv.range % lv.slide:
                msg = (f"level {k}: range {_format_us(lv.range)} must be a whole multiple of its "
                       f"slide {_format_us(lv.slide)} (w_k = u_k * b_k)")
                raise ValueError(msg)
            if k == 0:
                continue
            prev = self.levels[k - 1]
            if lv.range <= prev.range:
                msg = (f"level {k}: range {_format_us(lv.range)} must be greater than level "
                       f"{k - 1}'s range {_format_us(prev.range)} (ranges strictly increase)")
                raise ValueError(msg)
            if lv.slide < prev.slide:
                msg = (f"level {k}: slide {_format_us(lv.slide)} must not be smaller than level "
                       f"{k - 1}'s slide {_format_us(prev.slide)} (slides never decrease)")
                raise ValueError(msg)
            if lv.slide % prev.slide:
                msg = (f"level {k}: slide {_format_us(lv.slide)} must be a whole multiple of "
                       f"level {k - 1}'s slide {_format_us(prev.slide)} (b_k = l_k * b_(k-1): "
                       f"granules must nest)")
                raise ValueError(msg)
        if self.levels[-1].range // self.levels[0].slide > MAX_CELLS_PER_KEY:
            msg = (f"level {len(self.levels) - 1}: range {_format_us(self.levels[-1].range)} "
                   f"spans more than {MAX_CELLS_PER_KEY} of level 0's slides "
                   f"{_format_us(self.levels[0].slide)}; use a coarser finest slide")
            raise ValueError(msg)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_levels(
        cls,
        levels: list[tuple[str | int | dt.timedelta, str | int | dt.timedelta]],
        origin: int | str | dt.datetime = 0,
        closed: str = "left",
    ) -> MultiGranularSpec:
        """Build from ``[(range, slide), ...]``, finest level first.

        Examples
        --------
        >>> MultiGranularSpec.from_levels([("1 minute", "1 second"), ("1 week", "1 day")]
        ...                               ).levels[1].range == 7 * 86_400_000_000
        True
        >>> MultiGranularSpec.from_levels([("1 minute", "1 second")], "1970-01-01 00:00:02").origin
        2000000
        >>> MultiGranularSpec.from_levels([("1 minute", "7 seconds")])
        Traceback (most recent call last):
        ...
        ValueError: level 0: range 1 minutes must be a whole multiple of its slide 7 seconds (w_k = u_k * b_k)
        """  # noqa: E501
        if isinstance(levels, (str, bytes)) or not levels:
            msg = f"`levels` must be a non-empty list of (range, slide) pairs; got {levels!r}"
            raise ValueError(msg)
        parsed = []
        for k, pair in enumerate(levels):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                msg = f"`levels[{k}]` must be a (range, slide) pair; got {pair!r}"
                raise ValueError(msg)
            parsed.append(Level(to_micros(pair[0], f"levels[{k}] range"),
                                to_micros(pair[1], f"levels[{k}] slide")))
        return cls(tuple(parsed), _origin_us(origin), closed)

    @classmethod
    def parse(cls, clause: str, origin: int | str | dt.datetime = 0,
              closed: str = "left") -> MultiGranularSpec:
        """Parse the paper's clause ``RANGES r_(n-1), ..., r_0 SLIDES b_(n-1), ..., b_0``.

        Case-insensitive, brackets optional; levels may be listed widest first (the paper's
        order) or finest first.

        Examples
        --------
        >>> MultiGranularSpec.parse("ranges 10 minutes, 1 minute slides 1 minute, 1 second"
        ...                         ).levels[0]
        Level(range=60000000, slide=1000000)
        >>> MultiGranularSpec.parse("RANGES 1 HOUR SLIDES 1 MINUTE, 1 SECOND")
        Traceback (most recent call last):
        ...
        ValueError: `window` lists 1 ranges but 2 slides; each level needs one of each
        """
        match = _CLAUSE.match(clause) if isinstance(clause, str) else None
        if match is None:
            msg = (f"`window` must read like 'RANGES 1 HOUR, 1 MINUTE SLIDES 5 MINUTES, "
                   f"1 SECOND'; got {clause!r}")
            raise ValueError(msg)
        ranges = [p.strip() for p in match.group("ranges").split(",")]
        slides = [p.strip() for p in match.group("slides").split(",")]
        if len(ranges) != len(slides):
            msg = (f"`window` lists {len(ranges)} ranges but {len(slides)} slides; each level "
                   f"needs one of each")
            raise ValueError(msg)
        values = [to_micros(r, f"window range {r!r}") for r in ranges]
        pairs = list(zip(ranges, slides, strict=True))
        if len(values) > 1 and values[0] > values[-1]:
            pairs.reverse()  # the paper's order: widest first
        return cls.from_levels(pairs, origin, closed)

    # ------------------------------------------------------------------ derived values
    @property
    def n_levels(self) -> int:
        """Number of levels."""
        return len(self.levels)

    @property
    def finest_slide(self) -> int:
        """``b_0``: the finest granule, in microseconds."""
        return self.levels[0].slide

    def clause(self) -> str:
        """The paper's clause for this specification (widest level first).

        Examples
        --------
        >>> MultiGranularSpec.from_levels([("1 minute", "1 second"), ("1 hour", "5 minutes")]
        ...                               ).clause()
        'RANGES 1 hours, 1 minutes SLIDES 5 minutes, 1 seconds'
        """
        ranges = ", ".join(_format_us(lv.range) for lv in reversed(self.levels))
        slides = ", ".join(_format_us(lv.slide) for lv in reversed(self.levels))
        return f"RANGES {ranges} SLIDES {slides}"

    @property
    def shift(self) -> int:
        """What the chain adds to every time and watermark: 1 µs for ``closed="left"``
        (``window()``'s ``[s, s + w)`` is the paper's ``(s - 1, s + w - 1]`` one µs later),
        else 0."""
        return 1 if self.closed == "left" else 0

    def chain(self) -> MultiGranularSpec:
        """The paper's specification (``closed="right"``) the stairwise chain runs, on times
        moved by :attr:`shift`: for ``closed="left"``, its origin is the latest instant
        aligned with ``t0`` on every slide at or before :data:`FIRST_TIMESTAMP`, so no row of
        a timestamp column is before it.

        Examples
        --------
        >>> spec = MultiGranularSpec.from_levels([(4, 1), (8, 2)], origin=1)
        >>> chain = spec.chain()
        >>> chain.closed, chain.origin <= FIRST_TIMESTAMP, (chain.origin - 1) % 2
        ('right', True, 0)
        """
        if self.closed == "right":
            return self
        coarsest = self.levels[-1].slide  # a whole multiple of every slide
        steps = -(-(self.origin - FIRST_TIMESTAMP) // coarsest)
        return MultiGranularSpec(self.levels, self.origin - steps * coarsest, "right")

    @property
    def first_instant(self) -> int:
        """The earliest time a row may have to be in a window (``t0`` for ``closed="right"``;
        before every timestamp for ``closed="left"``)."""
        return self.chain().origin - self.shift

    def scope(self, level: int, tc: int) -> tuple[int, int]:
        """Closed bounds of ``level``'s latest window that ends by instant ``tc``: the
        paper's ``[max(t0, t_k), tc - (tc - t0) mod b_k]`` for ``closed="right"``.

        Examples
        --------
        >>> spec = MultiGranularSpec.from_levels([(4, 1), (8, 2), (16, 4)], closed="right")
        >>> spec.scope(1, 11), spec.scope(2, 11)
        ((3, 10), (0, 8))
        >>> MultiGranularSpec.from_levels([(4, 1), (8, 2), (16, 4)]).scope(2, 11)
        (-4, 11)
        """
        chain, shift = self.chain(), self.shift
        lv = self.levels[level]
        front = tc + shift - (tc + shift - chain.origin) % lv.slide
        return max(chain.origin, front - lv.range + 1) - shift, front - shift

    def continuous(self) -> MultiGranularSpec:
        """The same ranges, every level sliding at the finest slide (continuous reporting).

        Examples
        --------
        >>> MultiGranularSpec.from_levels([(4, 1), (8, 2)]).continuous().levels[1]
        Level(range=8, slide=1)
        """
        b0 = self.finest_slide
        return MultiGranularSpec(tuple(Level(lv.range, b0) for lv in self.levels), self.origin,
                                 self.closed)


def _origin_us(origin: int | str | dt.datetime) -> int:
    """``origin`` in µs since the epoch: an int of µs, a datetime or a date-time string (naive
    ones read as UTC)."""
    if isinstance(origin, str):
        return origin_micros(origin)
    if isinstance(origin, dt.datetime):
        if origin.tzinfo is None:
            origin = origin.replace(tzinfo=dt.UTC)
        delta = origin - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        return delta // dt.timedelta(microseconds=1)
    if isinstance(origin, bool) or not isinstance(origin, int):
        msg = (f"`origin` must be an int of microseconds, a datetime or a string like "
               f"'2024-01-01 00:00:00'; got {origin!r}")
        raise ValueError(msg)
    return origin
