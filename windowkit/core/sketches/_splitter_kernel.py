"""Numba kernels of SPLITTER with lazy, closed-form expiry (see :mod:`.splitter`).

Per cell a FIFO ring of sub-cells ``(init, last, cnt)`` lives in row ``cell`` of three
``(cells, K)`` arrays, with ``head``/``size`` per cell. Only the head can expire. The head's
stored values are exact as of step ``base[cell]``; from step ``u0 = max(base + 1, init + N)`` on it
loses ``cnt / L`` per step (``L = last - init + 1``: a constant rate, Listing 3.4 lines 11-18),
so after ``s = clamp(t - u0 + 1, 0, L)`` steps its counter is ``cnt * (L - s) / L`` and its
``init`` is ``init + s``; it is gone at step ``u0 + L - 1`` and its successor's ``base`` is that
step. Nothing is touched per step: a cell is brought up to date only when a sample or a query
reaches it.
"""

from __future__ import annotations

import numba
import numpy as np

from windowkit.core.sketches._hashing import _column, _mix


@numba.njit(cache=True, inline="always")
def _pop_expired(cell, t, n, q_init, q_last, head, size, base):
    cap = q_init.shape[1]
    while size[cell] > 0:
        h = head[cell]
        length = q_last[cell, h] - q_init[cell, h] + 1
        u0 = max(base[cell] + 1, q_init[cell, h] + n)
        if t - u0 + 1 >= length:
            head[cell] = (h + 1) % cap
            size[cell] -= 1
            base[cell] = u0 + length - 1
        else:
            break


@numba.njit(cache=True, inline="always")
def _head_now(cell, t, n, q_init, q_last, q_cnt, head, base):
    """Counter and init of the (unexpired) head at step ``t``."""
    h = head[cell]
    init = q_init[cell, h]
    length = q_last[cell, h] - init + 1
    s = t - max(base[cell] + 1, init + n) + 1
    if s <= 0:
        return q_cnt[cell, h], init
    return q_cnt[cell, h] * (length - s) / length, init + s


@numba.njit(cache=True)
def values_kernel(cells, t, n, q_init, q_last, q_cnt, head, size, base):
    """Cell values ``v`` (sum of the sub-cell counters) at step ``t`` for the given cells."""
    cap = q_init.shape[1]
    out = np.zeros(cells.size, dtype=np.float64)
    for i in range(cells.size):
        cell = cells[i]
        _pop_expired(cell, t, n, q_init, q_last, head, size, base)
        if size[cell] == 0:
            continue
        v, _ = _head_now(cell, t, n, q_init, q_last, q_cnt, head, base)
        for k in range(1, size[cell]):
            v += q_cnt[cell, (head[cell] + k) % cap]
        out[i] = v
    return out


@numba.njit(cache=True)
def expire_all(t, n, q_init, q_last, head, size, base):
    """Drop every sub-cell fully expired by step ``t``."""
    for cell in range(head.size):
        _pop_expired(cell, t, n, q_init, q_last, head, size, base)


@numba.njit(cache=True)
def ingest_kernel(keys, mix, smix, coeffs, width, ticks, start, n, thr, mu,
                  q_init, q_last, q_cnt, head, size, base, counters):
    """Process samples ``start..`` (Listing 3.4 lines 20-48 per row, lazily expired).

    Returns the index of the first unprocessed sample: ``keys.size`` when done, or the sample
    at which some cell's ring is full (the caller grows the rings and calls again).
    ``counters[0]`` counts splits (line 41), ``counters[1]`` merges (line 35).
    """
    depth = coeffs.shape[1]
    cap = q_init.shape[1]
    w = np.uint64(width)
    cells = np.empty(depth, dtype=np.int64)
    for i in range(start, keys.size):
        x = keys[i]
        if mix:
            x = _mix(x ^ smix)
        for r in range(depth):
            cells[r] = r * width + _column(x, coeffs[0, r], coeffs[1, r], coeffs[2, r], w)
            if size[cells[r]] >= cap:
                return i
        t = ticks[i]
        for r in range(depth):
            cell = cells[r]
            _pop_expired(cell, t, n, q_init, q_last, head, size, base)
            sz = size[cell]
            h = head[cell]
            if sz == 0:  # no sub-cell: create one (lines 24-28)
                head[cell] = 0
                q_init[cell, 0] = t
                q_last[cell, 0] = t
                q_cnt[cell, 0] = 1.0
                size[cell] = 1
                base[cell] = t
                continue
            # bring the head up to date at t (its values are then exact as of t)
            cnt_h, init_h = _head_now(cell, t, n, q_init, q_last, q_cnt, head, base)
            q_cnt[cell, h] = cnt_h
            q_init[cell, h] = init_h
            base[cell] = t
            tail = (h + sz - 1) % cap
            c_last = q_cnt[cell, tail]
            if c_last < thr:  # lines 29-31
                q_last[cell, tail] = t
                q_cnt[cell, tail] = c_last + 1.0
                continue
            if sz >= 2:  # lines 33-39
                p = (tail - 1 + cap) % cap
                span_pred = q_init[cell, tail] - q_init[cell, p]
                span_last = q_last[cell, tail] - q_init[cell, tail] + 1
                c_pred = q_cnt[cell, p]
                err = np.inf
                if span_pred > 0 and c_pred > 0.0:
                    f_pred = c_pred / span_pred
                    f_last = c_last / span_last
                    err = f_last / f_pred if f_last > f_pred else f_pred / f_last
                if err <= mu:
                    q_last[cell, p] = q_last[cell, tail]
                    q_cnt[cell, p] = c_pred + c_last
                    q_init[cell, tail] = t
                    q_last[cell, tail] = t
                    q_cnt[cell, tail] = 1.0
                    counters[1] += 1
                    continue
            new = (h + sz) % cap  # lines 41-45: split
            q_init[cell, new] = t
            q_last[cell, new] = t
            q_cnt[cell, new] = 1.0
            size[cell] = sz + 1
            counters[0] += 1
    return keys.size
