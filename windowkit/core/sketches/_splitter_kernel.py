"""Numba kernels of SPLITTER with lazy, closed-form expiry (see :mod:`.splitter`).

Sub-cells ``(init, last, cnt)`` live in a pool of records shared by all cells (a free list
recycles them); each cell keeps a FIFO linked list through ``nxt`` with pointers ``head``,
``tail`` and ``pred`` (the record before ``tail``), so memory follows the number of live
sub-cells. Only the head can expire. The head's stored values are exact as of step ``base``; from
step ``u0 = max(base + 1, init + N)`` on it loses ``cnt / L`` per step (``L = last - init + 1``:
a constant rate, Listing 3.4 lines 11-18), so after ``s = clamp(t - u0 + 1, 0, L)`` steps its
counter is ``cnt * (L - s) / L`` and its ``init`` is ``init + s``; it is gone at step
``u0 + L - 1`` and its successor's ``base`` is that step. Nothing is touched per step: a cell is
brought up to date only when a sample or a query reaches it.

``meta`` holds ``[splits, merges, n_free, used]``.
"""

from __future__ import annotations

import numba
import numpy as np

from windowkit.core.sketches._hashing import _column, _mix

SPLITS, MERGES, N_FREE, USED = 0, 1, 2, 3


@numba.njit(cache=True, inline="always")
def _pop_expired(cell, t, n, cells, p_init, p_last, nxt, free, meta):
    # cells columns: 0 head, 1 tail, 2 pred, 3 size, 4 base
    while cells[cell, 3] > 0:
        h = cells[cell, 0]
        length = p_last[h] - p_init[h] + 1
        u0 = max(cells[cell, 4] + 1, p_init[h] + n)
        if t - u0 + 1 < length:
            break
        free[meta[N_FREE]] = h
        meta[N_FREE] += 1
        size = cells[cell, 3] - 1
        cells[cell, 3] = size
        cells[cell, 0] = nxt[h]
        cells[cell, 4] = u0 + length - 1
        if size < 2:
            cells[cell, 2] = -1
        if size == 0:
            cells[cell, 0] = -1
            cells[cell, 1] = -1


@numba.njit(cache=True, inline="always")
def _head_now(cell, t, n, cells, p_init, p_last, p_cnt):
    """Counter and init of the (unexpired) head at step ``t``."""
    h = cells[cell, 0]
    init = p_init[h]
    length = p_last[h] - init + 1
    s = t - max(cells[cell, 4] + 1, init + n) + 1
    if s <= 0:
        return p_cnt[h], init
    return p_cnt[h] * (length - s) / length, init + s


@numba.njit(cache=True)
def values_kernel(query, t, n, cells, p_init, p_last, p_cnt, nxt, free, meta):
    """Cell values ``v`` (sum of the sub-cell counters) at step ``t`` for the given cells."""
    out = np.zeros(query.size, dtype=np.float64)
    for i in range(query.size):
        cell = query[i]
        _pop_expired(cell, t, n, cells, p_init, p_last, nxt, free, meta)
        if cells[cell, 3] == 0:
            continue
        v, _ = _head_now(cell, t, n, cells, p_init, p_last, p_cnt)
        r = cells[cell, 0]
        for _ in range(1, cells[cell, 3]):
            r = nxt[r]
            v += p_cnt[r]
        out[i] = v
    return out


@numba.njit(cache=True)
def expire_all(t, n, cells, p_init, p_last, nxt, free, meta):
    """Drop every sub-cell fully expired by step ``t``."""
    for cell in range(cells.shape[0]):
        _pop_expired(cell, t, n, cells, p_init, p_last, nxt, free, meta)


@numba.njit(cache=True, inline="always")
def _alloc(t, p_init, p_last, p_cnt, nxt, free, meta):
    if meta[N_FREE] > 0:
        meta[N_FREE] -= 1
        r = free[meta[N_FREE]]
    else:
        r = meta[USED]
        meta[USED] += 1
    p_init[r] = t
    p_last[r] = t
    p_cnt[r] = 1.0
    nxt[r] = -1
    return r


@numba.njit(cache=True)
def ingest_kernel(keys, mix, smix, coeffs, spark, width, ticks, start, n, thr, mu,
                  cells, p_init, p_last, p_cnt, nxt, free, meta):
    """Process samples ``start..`` (Listing 3.4 lines 20-48 per row, lazily expired).

    Returns the index of the first unprocessed sample: ``keys.size`` when done, or the sample
    at which the record pool might run out (the caller grows it and calls again).
    """
    depth = coeffs.shape[1]
    w = np.uint64(width)
    capacity = p_init.size
    for i in range(start, keys.size):
        if meta[N_FREE] + capacity - meta[USED] < depth:
            return i
        x = keys[i]
        if mix:
            x = _mix(x ^ smix)
        t = ticks[i]
        for r in range(depth):
            cell = r * width + _column(x, coeffs[0, r], coeffs[1, r], coeffs[2, r], w, spark)
            _pop_expired(cell, t, n, cells, p_init, p_last, nxt, free, meta)
            sz = cells[cell, 3]
            if sz == 0:  # no sub-cell: create one (lines 24-28)
                rec = _alloc(t, p_init, p_last, p_cnt, nxt, free, meta)
                cells[cell, 0] = rec
                cells[cell, 1] = rec
                cells[cell, 2] = -1
                cells[cell, 3] = 1
                cells[cell, 4] = t
                continue
            # bring the head up to date at t (its values are then exact as of t)
            h = cells[cell, 0]
            cnt_h, init_h = _head_now(cell, t, n, cells, p_init, p_last, p_cnt)
            p_cnt[h] = cnt_h
            p_init[h] = init_h
            cells[cell, 4] = t
            tail = cells[cell, 1]
            c_last = p_cnt[tail]
            # lines 29-31; and (time-based windows) a sub-cell spans at least one tick: a
            # sample in the tick its last sub-cell began joins it (a split or merge would
            # queue sub-cells of one tick that then expire one tick after another)
            if c_last < thr or p_init[tail] == t:
                p_last[tail] = t
                p_cnt[tail] = c_last + 1.0
                continue
            if sz >= 2:  # lines 33-39
                p = cells[cell, 2]
                span_pred = p_init[tail] - p_init[p]
                span_last = p_last[tail] - p_init[tail] + 1
                c_pred = p_cnt[p]
                err = np.inf
                if span_pred > 0 and c_pred > 0.0:
                    f_pred = c_pred / span_pred
                    f_last = c_last / span_last
                    err = f_last / f_pred if f_last > f_pred else f_pred / f_last
                if err <= mu:
                    p_last[p] = p_last[tail]
                    p_cnt[p] = c_pred + c_last
                    p_init[tail] = t
                    p_last[tail] = t
                    p_cnt[tail] = 1.0
                    meta[MERGES] += 1
                    continue
            rec = _alloc(t, p_init, p_last, p_cnt, nxt, free, meta)  # lines 41-45: split
            nxt[tail] = rec
            cells[cell, 2] = tail
            cells[cell, 1] = rec
            cells[cell, 3] = sz + 1
            meta[SPLITS] += 1
    return keys.size
