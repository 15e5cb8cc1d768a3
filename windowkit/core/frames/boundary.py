"""Boundary frames: the stream is partitioned where a value crosses a multiple of ``x``.

Section 4.3: "boundary frames segment the stream whenever the value of a user-specified
attribute crosses a (multiple of) a given boundary x"; the n-th frame holds the rows with
``(n - 1) x <= a < n x`` (mile markers, price levels, every metre of depth). A frame is a
maximal run of a key's rows whose values fall between the same two consecutive multiples of
``x`` (``floor(a / x)`` unchanged); the first row in another band opens the next frame. So the
frames partition the stream (missing values aside: see ``missing``), and each frame is the
minimal span between two crossings. Common semantics (missing values, minimum duration,
fragments, extent) are those of ``windowkit.core.frames._engine``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from windowkit.core.durations import Duration
from windowkit.core.frames._engine import SequenceFramer, SequenceFrameSpec
from windowkit.core.frames.framing import (
    BOUNDARY,
    CONTINUE,
    START,
    DuplicatePolicy,
    Extent,
    Framing,
    MissingPolicy,
)
from windowkit.core.registry import register
from windowkit.core.serialization import StateFormatError


def check_boundary(x: float) -> float:
    """Check the boundary width: a finite number above zero.

    Examples
    --------
    >>> check_boundary(0)
    Traceback (most recent call last):
    ...
    ValueError: `x` must be a finite number > 0; got 0
    """
    ok = isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
    if not ok or not math.isfinite(x) or x <= 0:
        msg = f"`x` must be a finite number > 0; got {x!r}"
        raise ValueError(msg)
    return float(x)


@register("BoundaryFraming")
class BoundaryFraming(Framing):
    """The decision of boundary frames: a row in another band of width ``x`` starts a frame.

    Examples
    --------
    >>> f = BoundaryFraming(10.0)
    >>> state = f.initial_state()
    >>> [f.decide(state, v, 0) for v in (3.0, 9.5, 10.0, 12.0)] == [START, CONTINUE, START,
    ...                                                            CONTINUE]
    True
    """

    span = "maximal"
    state_size = 1
    builtin_kind = BOUNDARY

    def __init__(self, x: float) -> None:
        self.x = check_boundary(x)

    def decide(self, state: np.ndarray, value: float, time: int) -> int:
        """Continue while ``floor(value / x)`` is unchanged, else start a new frame.

        Examples
        --------
        >>> BoundaryFraming(1.0).decide(np.array([2.0]), 2.5, 0) == CONTINUE
        True
        """
        band = math.floor(value / self.x)
        same = band == state[0]
        state[0] = band
        return CONTINUE if same else START

    def kernel_params(self) -> np.ndarray:
        """``[x]``.

        Examples
        --------
        >>> BoundaryFraming(2.5).kernel_params().tolist()
        [2.5]
        """
        return np.array([self.x])

    def get_params(self) -> dict[str, Any]:
        """``{"x": x}``.

        Examples
        --------
        >>> BoundaryFraming(2.5).get_params()
        {'x': 2.5}
        """
        return {"x": self.x}


@register()
class BoundaryFramer(SequenceFramer):
    """Boundary frames over a keyed stream (incremental, per key; a ``StreamOperator``).

    Parameters
    ----------
    x : float
        The boundary: frames change where ``floor(value / x)`` changes.
    min_duration : str, int or Duration
        Shortest reported frame (``"3 rows"``, ``"90 seconds"``); shorter ones are dropped.
    missing : {"unsatisfied", "satisfying"}
        Missing values end the frame (the next known row opens a new one), or are bridged.
    schedule : str, int or None
        Reporting period; absent reports are missing values.
    fragment_every : str, int, Duration or None
        Emit ``partial`` rows of open frames this often.
    extent : {"conservative", "liberal"}
        ``start`` is the frame's first row, or the report before it (the crossing happened
        somewhere between the two).

    duplicates : {"keep"}
        Rows of one key at one time are all kept, in value order (missing last); ``"any"`` and
        ``"all"`` apply to truth values only and are refused.

    Examples
    --------
    Mile markers every 1.0: positions 0.2, 0.7, 1.1, 1.9, 2.05.

    >>> framer = BoundaryFramer(1.0)
    >>> out = framer.update(np.array([0, 10, 20, 30, 40]), [0.2, 0.7, 1.1, 1.9, 2.05])
    >>> out[["start", "last", "end", "n_tuples"]].values.tolist()
    [[0, 10, 20, 2], [20, 30, 40, 2]]
    >>> framer.finish()[["start", "last", "end", "n_tuples"]].values.tolist()
    [[40, 40, 41, 1]]
    """

    FORMAT_TAG = "BNDFRAME"

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
        framing = BoundaryFraming(x)
        spec = spec or SequenceFrameSpec.create(min_duration, missing, schedule, fragment_every,
                                                extent, duplicates)
        super().__init__(framing, spec)

    @classmethod
    def _rebuild(cls, framing: Any, spec: SequenceFrameSpec) -> BoundaryFramer:
        if not isinstance(framing, BoundaryFraming):
            msg = f"BoundaryFramer state names framing {type(framing).__name__}"
            raise StateFormatError(msg)
        return cls(framing.x, spec=spec)
