"""The public custom framing contract (Definition 5), and Appendix B's F3 written with it.

A framing function ``f(F, C, t) -> (F', C')`` takes the framing so far, its state and the next
tuple, and decides whether to open a frame, extend the open one, or close and emit it. Write a
:class:`Framing` subclass that makes that decision for one key's next known value, and
:class:`CustomFramer` runs it over a keyed stream with everything else windowkit's framings
share (time order, missing values and absent reports, minimum duration, frame ids, partial and
final fragments, watermarks, frame extent, state bytes: see ``windowkit.core.frames._engine``).

The decision is made of bit flags, returned by :meth:`Framing.decide`:

* ``JOIN``: the row joins the open frame, or opens a new one (alias ``CONTINUE``);
* ``BREAK``: the open frame ends before this row (``START = BREAK | JOIN``: the row opens the
  next frame; ``SKIP = BREAK``: the row is in no frame; a row that does not join always ends
  the open frame);
* ``SATISFIED`` (minimal framings, ``span = "minimal"``): the frame including this row satisfies
  the predicate, and closes after it once it is ``min_duration`` long.

The framing's state is a small float64 vector per key (``state_size`` values, starting at
:meth:`Framing.initial_state`), changed in place by :meth:`Framing.decide`. windowkit resets it
to the initial state when a missing value breaks a frame (``missing="unsatisfied"``) and after a
minimal frame closes; otherwise the framing keeps its own state across frames (a framing that
answers ``START`` sets up the new frame's state itself).

Fast path (optional): give the class a ``kernel``, a ``numba.njit`` function
``kernel(state, params, value, time) -> int`` with the same meaning as :meth:`Framing.decide`,
and :meth:`Framing.kernel_params` returning its float parameters; windowkit then runs the whole
batch in compiled code (the loop around a user's kernel is compiled once per process, a few
seconds, so it pays off on large inputs). Without a kernel, :meth:`Framing.decide` is called
once per known row from a plain-Python loop (some hundred thousand rows per second).

A framing's ``__init__`` must accept the keywords :meth:`Framing.get_params` returns, so that
state bytes can rebuild it. State bytes name the framing's class by its name in windowkit's
registry (:mod:`windowkit.core.registry`), never by a module to import: a subclass registers
itself when its class statement runs, so its state is read in any process that defines it
(Spark workers do when they unpickle the function holding it: define it in an importable
module, not ``__main__``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from windowkit.core.durations import Duration
from windowkit.core.frames._engine import (
    BREAK,
    CONTINUE,
    INCREASING,
    JOIN,
    SATISFIED,
    SKIP,
    START,
    THRESHOLD,
    Extent,
    SequenceFramer,
    SequenceFrameSpec,
    Span,
)
from windowkit.core.frames.threshold import MissingPolicy
from windowkit.core.registry import register, register_plugin

__all__ = ["BREAK", "CONTINUE", "JOIN", "SATISFIED", "SKIP", "START", "CustomFramer", "Framing",
           "IncreasingTrend", "ThresholdFraming"]


class Framing:
    """Base class of a framing: the per-row decision of a framing function (Definition 5).

    Subclasses set ``span`` (``"maximal"``: frames grow while a condition holds;
    ``"minimal"``: frames close as soon as it holds) and ``state_size``, and implement
    :meth:`decide`. See the module docstring for the flags and the optional numba fast path.

    Examples
    --------
    Frames of rows whose values stay on one side of zero:

    >>> class SignRuns(Framing):
    ...     state_size = 1
    ...     def decide(self, state, value, time):
    ...         side = float(value >= 0)
    ...         same = state[0] == side
    ...         state[0] = side
    ...         return CONTINUE if same else START
    >>> SignRuns().decide(np.array([np.nan]), 3.0, 0) == START
    True
    """

    span: ClassVar[Span] = "maximal"

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        register_plugin(cls)  # state bytes name the class; see windowkit.core.registry
    state_size: ClassVar[int] = 1
    kernel: ClassVar[Any] = None
    builtin_kind: ClassVar[int | None] = None  # windowkit's own framings: a compiled decision

    def initial_state(self) -> np.ndarray:
        """The state of a key before its first row (default: ``state_size`` NaNs).

        Examples
        --------
        >>> IncreasingTrend().initial_state().tolist()
        [nan]
        """
        return np.full(self.state_size, np.nan)

    def decide(self, state: np.ndarray, value: float, time: int) -> int:
        """Decide what the key's next known ``value`` (at ``time``) does; update ``state``.

        Parameters
        ----------
        state : numpy.ndarray of float64
            This key's state, changed in place.
        value : float
            The row's value (never missing: missing values do not reach the framing).
        time : int
            The row's event time (int64 µs).

        Returns
        -------
        int
            Flags: ``JOIN``, ``BREAK``, ``SATISFIED`` (or the aliases ``CONTINUE``, ``START``,
            ``SKIP``).

        Examples
        --------
        >>> state = IncreasingTrend().initial_state()
        >>> [IncreasingTrend().decide(state, v, 0) == CONTINUE for v in (1.0, 2.0, 1.5)]
        [False, True, False]
        """
        raise NotImplementedError

    def kernel_params(self) -> np.ndarray:
        """Float parameters handed to ``kernel`` (default: none).

        Examples
        --------
        >>> IncreasingTrend().kernel_params().tolist()
        [0.0]
        """
        return np.zeros(1)

    def get_params(self) -> dict[str, Any]:
        """Keyword arguments that rebuild this framing (JSON-able).

        Examples
        --------
        >>> IncreasingTrend().get_params()
        {}
        """
        return {}


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


@register("ThresholdFraming")
class ThresholdFraming(Framing):
    """Threshold frames written with the contract, for frame extent (appendix F).

    The values are predicate codes: above 0 the predicate holds, 0 (or below) it does not,
    NaN it is missing. A row that holds joins the frame; any other row is in no frame. Run by
    :class:`CustomFramer`, this gives the frames of
    :class:`~windowkit.core.frames.ThresholdFramer` (rows of a key at distinct times; ties are
    ordered by value here) and adds ``extent="liberal"``: the freezer example, a frame from
    the last report that did not satisfy the predicate to the next one that does not.

    Examples
    --------
    >>> temps = np.array([30, 31, 33, 34, 30, 34, 33, 34, 35, 32])
    >>> framer = CustomFramer(ThresholdFraming(), extent="liberal")
    >>> out = framer.update(np.arange(1, 11), (temps > 32).astype(float))
    >>> out[["start", "last", "end"]].values.tolist()
    [[2, 4, 5], [5, 9, 10]]
    """

    span = "maximal"
    state_size = 1
    builtin_kind = THRESHOLD

    def decide(self, state: np.ndarray, value: float, time: int) -> int:
        """Join while the predicate holds; skip the row otherwise.

        Examples
        --------
        >>> ThresholdFraming().decide(np.zeros(1), 0.0, 0) == SKIP
        True
        """
        return CONTINUE if value > 0 else SKIP


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
        *,
        spec: SequenceFrameSpec | None = None,
    ) -> None:
        if not isinstance(framing, Framing):
            msg = f"`framing` must be a windowkit Framing; got {type(framing).__name__}"
            raise ValueError(msg)
        spec = spec or SequenceFrameSpec.create(min_duration, missing, schedule, fragment_every,
                                                extent)
        super().__init__(framing, spec)

    @classmethod
    def _rebuild(cls, framing: Any, spec: SequenceFrameSpec) -> CustomFramer:
        return cls(framing, spec=spec)
