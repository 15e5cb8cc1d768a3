"""Delta frames: a partition whose frames close when ``max(a) - min(a)`` would reach ``x``.

Section 4.3: "a frame is emitted whenever the delta between the minimum and maximum value of
this attribute becomes greater than a predefined value x ... The frame predicate can therefore
be given as max(a) - min(a) < x. The frame starting point is the end point of the previous frame
and the span of the frames is maximal" (read so that the predicate holds inside every frame: a
frame closes when ``max - min`` *would reach* ``x``). So a frame grows while its values stay
within a band narrower than ``x``; the row that would widen it to ``x`` or more opens the next
frame (a freezer warming by 2 degrees).
A single row always forms a frame (its delta is 0). Common semantics (missing values, minimum
duration, fragments, extent) are those of ``windowkit.core.frames._engine``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from windowkit.core.durations import Duration
from windowkit.core.frames._engine import SequenceFramer, SequenceFrameSpec
from windowkit.core.frames.boundary import check_boundary
from windowkit.core.frames.framing import (
    CONTINUE,
    DELTA,
    START,
    DuplicatePolicy,
    Extent,
    Framing,
    MissingPolicy,
)
from windowkit.core.registry import register
from windowkit.core.serialization import StateFormatError


@register("DeltaFraming")
class DeltaFraming(Framing):
    """The decision of delta frames: start a new frame when the band would reach ``x``.

    Examples
    --------
    >>> f = DeltaFraming(2.0)
    >>> state = f.initial_state()
    >>> [f.decide(state, v, 0) == CONTINUE for v in (10.0, 11.0, 9.5, 8.0)]
    [False, True, True, False]
    """

    span = "maximal"
    state_size = 2
    builtin_kind = DELTA

    def __init__(self, x: float) -> None:
        self.x = check_boundary(x)

    def decide(self, state: np.ndarray, value: float, time: int) -> int:
        """Continue while ``max - min < x`` with this value; otherwise start afresh.

        Examples
        --------
        >>> DeltaFraming(1.0).decide(np.array([0.0, 0.5]), 1.0, 0) == START
        True
        """
        if math.isnan(state[0]):
            state[:] = value
            return START
        lo, hi = min(state[0], value), max(state[1], value)
        if hi - lo < self.x:
            state[0], state[1] = lo, hi
            return CONTINUE
        state[:] = value
        return START

    def kernel_params(self) -> np.ndarray:
        """``[x]``.

        Examples
        --------
        >>> DeltaFraming(2.0).kernel_params().tolist()
        [2.0]
        """
        return np.array([self.x])

    def get_params(self) -> dict[str, Any]:
        """``{"x": x}``.

        Examples
        --------
        >>> DeltaFraming(2.0).get_params()
        {'x': 2.0}
        """
        return {"x": self.x}


@register()
class DeltaFramer(SequenceFramer):
    """Delta frames over a keyed stream (incremental, per key; a ``StreamOperator``).

    Parameters
    ----------
    x : float
        A frame's values stay within ``max - min < x``.
    min_duration : str, int or Duration
        Shortest reported frame (``"3 rows"``, ``"90 seconds"``); shorter ones are dropped.
    missing : {"unsatisfied", "satisfying"}
        Missing values end the frame (the next known row opens a new one), or are bridged.
    schedule : str, int or None
        Reporting period; absent reports are missing values.
    fragment_every : str, int, Duration or None
        Emit ``partial`` rows of open frames this often.
    extent : {"conservative", "liberal"}
        ``start`` is the frame's first row, or the report before it.

    duplicates : {"keep"}
        Rows of one key at one time are all kept, in value order (missing last); ``"any"`` and
        ``"all"`` apply to truth values only and are refused.

    Examples
    --------
    A freezer, frames closing when it drifts by 2 degrees:

    >>> framer = DeltaFramer(2.0)
    >>> out = framer.update(np.arange(6), [-10.0, -9.5, -8.2, -8.0, -11.0, -10.5])
    >>> out[["start", "last", "end", "n_tuples"]].values.tolist()
    [[0, 2, 3, 3], [3, 3, 4, 1]]
    """

    FORMAT_TAG = "DLTFRAME"

    def __init__(
        self,
        x: float,
        min_duration: str | int | Duration = "1 rows",
        missing: MissingPolicy = "unsatisfied",
        schedule: str | int | None = None,
        fragment_every: str | int | Duration | None = None,
        extent: Extent = "conservative",
        duplicates: DuplicatePolicy = "keep",
        *,
        spec: SequenceFrameSpec | None = None,
    ) -> None:
        spec = spec or SequenceFrameSpec.create(min_duration, missing, schedule, fragment_every,
                                                extent, duplicates)
        super().__init__(DeltaFraming(x), spec)

    @classmethod
    def _rebuild(cls, framing: Any, spec: SequenceFrameSpec) -> DeltaFramer:
        if not isinstance(framing, DeltaFraming):
            msg = f"DeltaFramer state names framing {type(framing).__name__}"
            raise StateFormatError(msg)
        return cls(framing.x, spec=spec)
