"""Aggregate frames: a partition by a predicate ``f(a) θ x`` over each frame's values.

Section 4.3: "the frame predicate is given by f_aggr(a) θ x ... The start point of aggregate
frames is the end point of the previous frame and its span can either be minimal or maximal";
section 4.3.1: *minimal* for predicates requiring the aggregate to be greater than a constant,
*maximal* for smaller than. ``f`` is one of ``count``, ``sum``, ``mean``, ``min``, ``max`` over
the frame's known values; ``θ`` is one of ``<``, ``<=``, ``>``, ``>=``.

* ``>`` / ``>=`` (minimal span): a frame starts at the first row after the previous frame and
  closes after the first row where ``f θ x`` holds and the frame is ``min_duration`` long (a
  tank filled with 1,000 litres: ``sum(volume) >= 1000``; 100 vehicles: ``sum(count) > 100``).
  A frame never reaches the predicate if, e.g., ``min > x`` fails on its first row: it then
  grows until a missing value or the end of input and is not reported. Its final row is
  emitted when the key's next element arrives (that element's time is ``end``), or, with a
  schedule, when the watermark shows the next report absent. No partial fragments.
* ``<`` / ``<=`` (maximal span): a frame grows while ``f θ x`` holds for it; the row that would
  make it fail opens the next frame, or, if ``f θ x`` fails for that row alone (e.g.
  ``sum < 10`` and a value of 12), it is in no frame and the frame after it starts at the
  next row. Frames shorter than ``min_duration`` are not reported (the partition is decided
  by the predicate alone). "Holds for the frame" is checked as the frame grows, as the
  framing function of Definition 5 does: for non-monotone aggregates (a ``sum`` of values of
  both signs, a ``mean``), the frame closes at the first row that would break it even if a
  longer frame would satisfy the predicate again.

Common semantics (missing values, minimum duration, fragments, extent) are those of
``windowkit.core.frames._engine``.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from windowkit.core.durations import Duration
from windowkit.core.frames._engine import SequenceFramer, SequenceFrameSpec
from windowkit.core.frames.framing import (
    AGGREGATE,
    CONTINUE,
    JOIN,
    SATISFIED,
    SKIP,
    START,
    DuplicatePolicy,
    Extent,
    Framing,
    MissingPolicy,
)
from windowkit.core.registry import register
from windowkit.core.serialization import StateFormatError
from windowkit.core.validation import check_choice

AggregateFunction = Literal["count", "sum", "mean", "min", "max"]
"""The aggregate ``f`` of an aggregate frame."""
Comparison = Literal["<", "<=", ">", ">="]
"""The comparison ``θ`` of an aggregate frame."""

FUNCTIONS = ("count", "sum", "mean", "min", "max")
COMPARISONS = ("<", "<=", ">", ">=")


def aggregate_value(func: str, values: list[float]) -> float:
    """``f`` over a list of values (plain Python; used by the slow path and the reference).

    Examples
    --------
    >>> aggregate_value("mean", [1.0, 2.0, 6.0])
    3.0
    """
    if func == "count":
        return float(len(values))
    if func == "sum":
        total = 0.0
        for v in values:
            total += v
        return total
    if func == "mean":
        return aggregate_value("sum", values) / len(values)
    return min(values) if func == "min" else max(values)


def compare(op: str, a: float, x: float) -> bool:
    """``a θ x``.

    Examples
    --------
    >>> compare("<=", 2.0, 2.0), compare(">", 2.0, 2.0)
    (True, False)
    """
    return {"<": a < x, "<=": a <= x, ">": a > x, ">=": a >= x}[op]


@register("AggregateFraming")
class AggregateFraming(Framing):
    """The decision of aggregate frames ``f(a) θ x`` (see the module docstring).

    Examples
    --------
    >>> f = AggregateFraming("sum", ">=", 10.0)
    >>> state = f.initial_state()
    >>> [f.decide(state, v, 0) for v in (4.0, 5.0, 1.0)] == [JOIN, JOIN, JOIN | SATISFIED]
    True
    """

    state_size = 4
    builtin_kind = AGGREGATE

    def __init__(self, func: AggregateFunction, op: Comparison, x: float) -> None:
        self.func = check_choice("func", func, FUNCTIONS)
        self.op = check_choice("op", op, COMPARISONS)
        ok = isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
        if not ok or not math.isfinite(x):
            msg = f"`x` must be a finite number; got {x!r}"
            raise ValueError(msg)
        self.x = float(x)
        self.span = "minimal" if op in (">", ">=") else "maximal"

    def initial_state(self) -> np.ndarray:
        """An empty frame: count 0, sum 0, min +inf, max -inf.

        Examples
        --------
        >>> AggregateFraming("max", "<", 1.0).initial_state().tolist()
        [0.0, 0.0, inf, -inf]
        """
        return np.array([0.0, 0.0, np.inf, -np.inf])

    def decide(self, state: np.ndarray, value: float, time: int) -> int:
        """Add the row to the frame, or start the next frame, or skip the row.

        Examples
        --------
        >>> f = AggregateFraming("sum", "<", 10.0)
        >>> state = f.initial_state()
        >>> [f.decide(state, v, 0) for v in (4.0, 5.0, 3.0, 12.0)] == [CONTINUE, CONTINUE,
        ...                                                            START, SKIP]
        True
        """
        count, total = state[0] + 1, state[1] + value
        lo, hi = min(state[2], value), max(state[3], value)
        agg = {"count": count, "sum": total, "mean": total / count, "min": lo, "max": hi}
        holds = compare(self.op, agg[self.func], self.x)
        if self.span == "minimal":
            state[:] = (count, total, lo, hi)
            return JOIN | SATISFIED if holds else JOIN
        if holds:
            state[:] = (count, total, lo, hi)
            return CONTINUE
        if compare(self.op, aggregate_value(self.func, [value]), self.x):
            state[:] = (1.0, value, value, value)
            return START
        state[:] = self.initial_state()
        return SKIP

    def kernel_params(self) -> np.ndarray:
        """``[function code, comparison code, x]``.

        Examples
        --------
        >>> AggregateFraming("mean", ">", 3.0).kernel_params().tolist()
        [2.0, 2.0, 3.0]
        """
        return np.array([FUNCTIONS.index(self.func), COMPARISONS.index(self.op), self.x],
                        dtype=np.float64)

    def get_params(self) -> dict[str, Any]:
        """``{"func": ..., "op": ..., "x": ...}``.

        Examples
        --------
        >>> AggregateFraming("count", ">=", 3).get_params()
        {'func': 'count', 'op': '>=', 'x': 3.0}
        """
        return {"func": self.func, "op": self.op, "x": self.x}


@register()
class AggregateFramer(SequenceFramer):
    """Aggregate frames ``f(a) θ x`` over a keyed stream (a ``StreamOperator``).

    Parameters
    ----------
    func : {"count", "sum", "mean", "min", "max"}
        The aggregate over a frame's known values.
    op : {"<", "<=", ">", ">="}
        The comparison: ``>``/``>=`` give minimal frames, ``<``/``<=`` maximal ones.
    x : float
        The constant.
    min_duration : str, int or Duration
        Minimal frames close only once this long; maximal frames shorter than it are dropped.
    missing : {"unsatisfied", "satisfying"}
        Missing values end the frame (and reset the aggregate), or are bridged (skipped by the
        aggregate).
    schedule : str, int or None
        Reporting period; absent reports are missing values.
    fragment_every : str, int, Duration or None
        Partial rows of open frames (maximal frames only).
    extent : {"conservative", "liberal"}
        ``start`` is the frame's first row, or the report before it.

    duplicates : {"keep"}
        Rows of one key at one time are all kept, in value order (missing last); ``"any"`` and
        ``"all"`` apply to truth values only and are refused.

    Examples
    --------
    Section 3's traffic example: frames of at least 100 vehicles (``sum(count) > 100``).

    >>> framer = AggregateFramer("sum", ">", 100)
    >>> out = framer.update(np.arange(0, 120, 20), [40, 50, 30, 60, 45, 10])
    >>> out[["start", "last", "end", "n_tuples"]].values.tolist()
    [[0, 40, 60, 3], [60, 80, 100, 2]]
    """

    FORMAT_TAG = "AGGFRAME"

    def __init__(
        self,
        func: AggregateFunction,
        op: Comparison,
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
        super().__init__(AggregateFraming(func, op, x), spec)

    @classmethod
    def _rebuild(cls, framing: Any, spec: SequenceFrameSpec) -> AggregateFramer:
        if not isinstance(framing, AggregateFraming):
            msg = f"AggregateFramer state names framing {type(framing).__name__}"
            raise StateFormatError(msg)
        return cls(framing.func, framing.op, framing.x, spec=spec)
