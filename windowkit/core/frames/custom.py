"""Custom framings: :class:`CustomFramer` runs any :class:`Framing`; Appendix B's F3 with it.

Write a :class:`Framing` subclass (the contract: :mod:`windowkit.core.frames.framing`, whose
names this module re-exports) that decides, for one key's next known value, whether it
extends the open frame, opens the next one or stays out of frames, and :class:`CustomFramer`
runs it over a keyed stream with everything windowkit's framings share (time order and ties,
missing values and absent reports, minimum duration, frame ids, partial and final fragments,
watermarks, frame extent, state bytes: see ``windowkit.core.frames._engine``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from windowkit.core.durations import Duration
from windowkit.core.frames._engine import SequenceFramer, SequenceFrameSpec
from windowkit.core.frames.framing import (
    BREAK,
    CONTINUE,
    INCREASING,
    JOIN,
    SATISFIED,
    SKIP,
    START,
    DuplicatePolicy,
    Extent,
    Framing,
    MissingPolicy,
)
from windowkit.core.frames.threshold import ThresholdFraming
from windowkit.core.registry import register

__all__ = ["BREAK", "CONTINUE", "JOIN", "SATISFIED", "SKIP", "START", "CustomFramer", "Framing",
           "IncreasingTrend", "ThresholdFraming"]


@register("IncreasingTrend")
class IncreasingTrend(Framing):
    """Appendix B's F3: maximal periods where the value increases.

    A row continues the frame when its value is above the previous row's; otherwise it opens
    the next frame. With ``min_duration="3 rows"`` this is F3, "maximal periods where
    Temperature is increasing over at least three time units" (the example's reports are one
    time unit apart, so three time units are three reports: ``(1, 4)`` and ``(7, 9)``).

    Examples
    --------
    >>> temps = [30, 31, 33, 34, 30, 34, 33, 34, 35, 32]
    >>> framer = CustomFramer(IncreasingTrend(), min_duration="3 rows")
    >>> out = framer.update(np.arange(1, 11), np.array(temps, dtype=float))
    >>> out[["start", "last", "end"]].values.tolist()
    [[1, 4, 5], [7, 9, 10]]
    """

    span = "maximal"
    state_size = 1
    builtin_kind = INCREASING

    def decide(self, state: np.ndarray, value: float, time: int) -> int:
        """Continue while the value rises; otherwise start a new frame (see class docstring).

        Examples
        --------
        >>> IncreasingTrend().decide(np.array([1.0]), 2.0, 0) == CONTINUE
        True
        """
        rising = value > state[0]
        state[0] = value
        return CONTINUE if rising else START


@register()
class CustomFramer(SequenceFramer):
    """Run any :class:`Framing` over a keyed stream (a ``StreamOperator``).

    Parameters
    ----------
    framing : Framing
        The per-row decision.
    min_duration : str, int or Duration
        ``"3 rows"`` or ``"90 seconds"``; an int means rows.
    missing : {"unsatisfied", "satisfying"}
        Missing values (null/NaN/inf rows; absent reports with a schedule) end frames and reset
        the framing's state, or are bridged (the framing never sees them).
    schedule : str, int or None
        Reporting period (``"30 seconds"``, or microseconds); absent reports are missing.
    fragment_every : str, int, Duration or None
        Emit ``partial`` rows of open frames this often (maximal framings only).
    extent : {"conservative", "liberal"}
        ``start`` is the frame's first row, or the last report before it (appendix F).
    duplicates : {"keep", "any", "all"}
        Rows of one key at one time: all kept, in the order the framing ties them, or, for a
        framing of truth values, one report holding if any / all of them hold.

    Examples
    --------
    >>> framer = CustomFramer(IncreasingTrend(), min_duration="2 rows", extent="liberal")
    >>> framer.update(np.array([1, 2, 3, 4]), [5.0, 4.0, 6.0, 1.0])[["start", "last", "end"]]
       start  last  end
    0      1     3    4
    """

    FORMAT_TAG = "CUSFRAME"

    def __init__(
        self,
        framing: Framing,
        min_duration: str | int | Duration = "1 rows",
        missing: MissingPolicy = "unsatisfied",
        schedule: str | int | None = None,
        fragment_every: str | int | Duration | None = None,
        extent: Extent = "conservative",
        duplicates: DuplicatePolicy = "keep",
        *,
        spec: SequenceFrameSpec | None = None,
    ) -> None:
        if not isinstance(framing, Framing):
            msg = f"`framing` must be a windowkit Framing; got {type(framing).__name__}"
            raise ValueError(msg)
        spec = spec or SequenceFrameSpec.create(min_duration, missing, schedule, fragment_every,
                                                extent, duplicates)
        super().__init__(framing, spec)

    @classmethod
    def _rebuild(cls, framing: Any, spec: SequenceFrameSpec) -> CustomFramer:
        return cls(framing, spec=spec)
