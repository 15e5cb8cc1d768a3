"""The framing contract (Definition 5): a framing's decision for one key's next known value.

A framing function ``f(F, C, t) -> (F', C')`` takes the framing so far, its state and the next
tuple, and decides whether to open a frame, extend the open one, or close and emit it. A
:class:`Framing` makes that decision; the engine (``windowkit.core.frames._engine``) runs it
over a keyed stream with everything every framing shares: time order and ties, missing values
and absent reports, minimum duration, frame ids, partial and final fragments, watermarks,
frame extent and state bytes. Every framer of windowkit (threshold, boundary, delta,
aggregate, custom) is a framing run by that engine; this module is what both sides import.

The decision is made of bit flags, returned by :meth:`Framing.decide`:

* ``JOIN``: the row joins the open frame, or opens a new one (alias ``CONTINUE``);
* ``BREAK``: the open frame ends before this row (``START = BREAK | JOIN``: the row opens the
  next frame; ``SKIP = BREAK``: the row is in no frame; a row that does not join always ends
  the open frame);
* ``SATISFIED`` (minimal framings, ``span = "minimal"``): the frame including this row satisfies
  the predicate, and closes after it once it is ``min_duration`` long.

The framing's state is a small float64 vector per key (``state_size`` values, starting at
:meth:`Framing.initial_state`), changed in place by :meth:`Framing.decide`. The engine resets it
to the initial state when a missing value breaks a frame (``missing="unsatisfied"``) and after a
minimal frame closes; otherwise the framing keeps its own state across frames (a framing that
answers ``START`` sets up the new frame's state itself).

A framing whose values are truth values (``truth_valued = True``: above 0 the predicate holds,
0 or below it does not, NaN it is missing) has its rows of one key at one time settled as
threshold frames settle them: taken unsatisfied, missing, satisfying, or made one report with
``duplicates="any"`` / ``"all"``. Other framings take tied rows by value (missing last), and
``"any"`` / ``"all"`` mean nothing for them: the engine refuses them.

Fast path (optional): give the class a ``kernel``, a ``numba.njit`` function
``kernel(state, params, value, time) -> int`` with the same meaning as :meth:`Framing.decide`,
and :meth:`Framing.kernel_params` returning its float parameters; the engine then runs the whole
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

from typing import Any, ClassVar, Literal

import numpy as np

from windowkit.core.registry import register_plugin

Span = Literal["maximal", "minimal"]
"""Whether frames grow while the predicate holds, or close as soon as it holds."""
Extent = Literal["conservative", "liberal"]
"""How far a frame's ``start`` reaches: its first row, or the last report before it."""
MissingPolicy = Literal["unsatisfied", "satisfying"]
"""How a missing value counts: ``"unsatisfied"`` breaks a frame, ``"satisfying"`` bridges."""
DuplicatePolicy = Literal["keep", "any", "all"]
"""Rows of one key at the same time: ``"keep"`` them all as reports (in a fixed order), or,
for truth values, make them one report that holds if ``"any"`` or ``"all"`` of them hold
(missing if none decides)."""

MISSING_POLICIES = ("unsatisfied", "satisfying")
EXTENTS = ("conservative", "liberal")
DUPLICATE_POLICIES = ("keep", "any", "all")

BREAK = 1
"""Action flag: the open frame ends before this row."""
JOIN = 2
"""Action flag: this row joins the open frame, or opens a new one."""
SATISFIED = 4
"""Action flag (minimal framings): the frame including this row satisfies the predicate."""
CONTINUE = JOIN
"""The row extends the open frame (opens one if none is open)."""
START = BREAK | JOIN
"""The open frame ends before this row; the row opens the next frame."""
SKIP = BREAK
"""The open frame ends before this row; the row is in no frame."""

# Codes of windowkit's own framings, whose decisions the engine has compiled (``builtin_kind``).
BOUNDARY, DELTA, AGGREGATE, INCREASING, THRESHOLD = 0, 1, 2, 3, 4


class Framing:
    """Base class of a framing: the per-row decision of a framing function (Definition 5).

    Subclasses set ``span`` (``"maximal"``: frames grow while a condition holds;
    ``"minimal"``: frames close as soon as it holds) and ``state_size``, and implement
    :meth:`decide`. See the module docstring for the flags, tied rows and the optional numba
    fast path.

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
    state_size: ClassVar[int] = 1
    kernel: ClassVar[Any] = None
    builtin_kind: ClassVar[int | None] = None  # windowkit's own framings: a compiled decision
    #: Values are truth values (> 0 holds, <= 0 does not, NaN missing): ties settle as threshold
    #: frames' ties, and ``duplicates="any"`` / ``"all"`` apply.
    truth_valued: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        register_plugin(cls)  # state bytes name the class; see windowkit.core.registry

    def initial_state(self) -> np.ndarray:
        """The state of a key before its first row (default: ``state_size`` NaNs).

        Examples
        --------
        >>> Framing().initial_state().tolist()
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
        >>> Framing().decide(np.zeros(1), 1.0, 0)
        Traceback (most recent call last):
        ...
        NotImplementedError
        """
        raise NotImplementedError

    def kernel_params(self) -> np.ndarray:
        """Float parameters handed to ``kernel`` (default: none).

        Examples
        --------
        >>> Framing().kernel_params().tolist()
        [0.0]
        """
        return np.zeros(1)

    def get_params(self) -> dict[str, Any]:
        """Keyword arguments that rebuild this framing (JSON-able).

        Examples
        --------
        >>> Framing().get_params()
        {}
        """
        return {}
