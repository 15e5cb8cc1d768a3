"""Compiled row decisions of the built-in framings (numba), and their dispatcher.

Each kernel takes a key's framing state (changed in place), the framing's float parameters, a
known value and its time, and returns the action flags of ``windowkit.core.frames.custom``
(1 BREAK, 2 JOIN, 4 SATISFIED). They live together so that the engine's compiled loop can call
them by a small integer code and stay cacheable on disk (a loop taking the decision as a
function argument is recompiled in every process: seconds per Spark worker).
"""

from __future__ import annotations

import numba
import numpy as np

BOUNDARY, DELTA, AGGREGATE, INCREASING = 0, 1, 2, 3


@numba.njit(cache=True)
def boundary_kernel(state, params, value, time):  # pragma: no cover - compiled
    """Boundary frames: a row in another band ``floor(value / x)`` starts a frame."""
    band = np.floor(value / params[0])
    same = band == state[0]
    state[0] = band
    return 2 if same else 3


@numba.njit(cache=True)
def delta_kernel(state, params, value, time):  # pragma: no cover - compiled
    """Delta frames: continue while ``max - min < x``; otherwise start afresh."""
    lo = min(state[0], value)
    hi = max(state[1], value)
    if state[0] == state[0] and hi - lo < params[0]:
        state[0] = lo
        state[1] = hi
        return 2
    state[0] = value
    state[1] = value
    return 3


@numba.njit(cache=True)
def _aggregate_of(func, count, total, lo, hi):  # pragma: no cover - compiled
    if func == 0:
        return count
    if func == 1:
        return total
    if func == 2:
        return total / count
    if func == 3:
        return lo
    return hi


@numba.njit(cache=True)
def _holds(op, a, x):  # pragma: no cover - compiled
    if op == 0:
        return a < x
    if op == 1:
        return a <= x
    if op == 2:
        return a > x
    return a >= x


@numba.njit(cache=True)
def aggregate_kernel(state, params, value, time):  # pragma: no cover - compiled
    """Aggregate frames; state: count, sum, min, max; params: function, comparison, x."""
    func, op, x = int(params[0]), int(params[1]), params[2]
    count, total = state[0] + 1, state[1] + value
    lo, hi = min(state[2], value), max(state[3], value)
    if op >= 2:  # minimal: add the row, report whether the frame now satisfies
        state[0], state[1], state[2], state[3] = count, total, lo, hi
        return 6 if _holds(op, _aggregate_of(func, count, total, lo, hi), x) else 2
    if _holds(op, _aggregate_of(func, count, total, lo, hi), x):
        state[0], state[1], state[2], state[3] = count, total, lo, hi
        return 2
    if _holds(op, _aggregate_of(func, 1.0, value, value, value), x):
        state[0], state[1], state[2], state[3] = 1.0, value, value, value
        return 3
    state[0], state[1], state[2], state[3] = 0.0, 0.0, np.inf, -np.inf
    return 1


@numba.njit(cache=True)
def increasing_kernel(state, params, value, time):  # pragma: no cover - compiled
    """Appendix B's F3: continue while the value rises (False against the initial NaN)."""
    rising = value > state[0]
    state[0] = value
    return 2 if rising else 3


@numba.njit(cache=True)
def decide_builtin(kind, state, params, value, time):  # pragma: no cover - compiled
    """The decision of built-in framing ``kind`` (``BOUNDARY``, ``DELTA``, ...)."""
    if kind == 0:
        return boundary_kernel(state, params, value, time)
    if kind == 1:
        return delta_kernel(state, params, value, time)
    if kind == 2:
        return aggregate_kernel(state, params, value, time)
    return increasing_kernel(state, params, value, time)
