"""Per-granule partial aggregates ("cells") and their exact, order-stable merging.

A cell summarizes the rows of one key in one granule as centred moments, so that cells merge
without the cancellation of raw power sums (Chan et al.'s pairwise update):

====== ================================================================
field  meaning
====== ================================================================
N      number of rows
SUM    sum of values
MIN    smallest value
MAX    largest value
MV     mean of values
SVV    sum of squared deviations of values from MV
MT     mean of ``time - ref`` in microseconds, ``ref`` the cell's end instant
STT    sum of squared deviations of times from their mean
STV    sum of products of time and value deviations
====== ================================================================

Times are kept relative to the cell's end instant (at most a granule away), so doubles keep
microsecond precision whatever the epoch; merging a cell into one with another reference shifts
``MT`` by the difference. A count-only cell (recurring items) has just ``N``; a basic cell
(reports of count, sum, mean, min and max only) has the first four fields.
"""

from __future__ import annotations

import numba
import numpy as np

N, SUM, MIN, MAX, MV, SVV, MT, STT, STV = range(9)
#: Number of fields of a full cell.
N_FIELDS = 9
#: Number of fields of a basic cell (``N, SUM, MIN, MAX``): all that count, sum, mean, min, max
#: and the decayed aggregates read, merged without the moments' divisions.
BASIC_FIELDS = 4


def empty_cells(count: int, n_fields: int = N_FIELDS) -> np.ndarray:
    """``count`` empty cells.

    Examples
    --------
    >>> empty_cells(2)[:, [N, MIN, MAX]].tolist()
    [[0.0, inf, -inf], [0.0, inf, -inf]]
    """
    cells = np.zeros((count, n_fields), dtype=np.float64)
    if n_fields > 1:
        cells[:, MIN] = np.inf
        cells[:, MAX] = -np.inf
    return cells


@numba.njit(cache=True, inline="always")
def merge_into(dst, src, shift):  # pragma: no cover - compiled
    """Merge cell ``src`` into ``dst``; ``shift`` = src's reference minus dst's (µs)."""
    nb = src[0]
    if nb == 0.0:
        return
    na = dst[0]
    if dst.shape[0] == 1:
        dst[0] = na + nb
        return
    if dst.shape[0] == BASIC_FIELDS:
        dst[N] = na + nb
        if na == 0.0:
            dst[SUM] = src[SUM]
            dst[MIN] = src[MIN]
            dst[MAX] = src[MAX]
            return
        dst[SUM] += src[SUM]
        if src[MIN] < dst[MIN]:
            dst[MIN] = src[MIN]
        if src[MAX] > dst[MAX]:
            dst[MAX] = src[MAX]
        return
    if na == 0.0:
        for f in range(dst.shape[0]):
            dst[f] = src[f]
        dst[MT] = src[MT] + shift
        return
    n = na + nb
    dv = src[MV] - dst[MV]
    dt = src[MT] + shift - dst[MT]
    w = na * nb / n
    dst[N] = n
    dst[SUM] += src[SUM]
    if src[MIN] < dst[MIN]:
        dst[MIN] = src[MIN]
    if src[MAX] > dst[MAX]:
        dst[MAX] = src[MAX]
    dst[MV] += dv * nb / n
    dst[MT] += dt * nb / n
    dst[SVV] += src[SVV] + dv * dv * w
    dst[STT] += src[STT] + dt * dt * w
    dst[STV] += src[STV] + dt * dv * w


@numba.njit(cache=True)
def rows_to_cells(slot, granule, time, value, origin, b0, open_g, open_cells, none,
                  n_fields):  # pragma: no cover - compiled
    """Fold time-ordered rows into one cell per (key slot, granule), in order of creation.

    A key's open cell from earlier batches (``open_g[slot] != none``) is taken over: it
    continues if the key's first row falls in its granule, else it is emitted first. Taken-over
    open cells are reset to ``none``. Returns ``(cell_slot, cell_g, cells)``.

    Rows are summed as *shifted* power sums (values less the cell's first value, times less
    the cell's end instant, both small next to the spread that matters): no division per row,
    and the sums become centred moments once per cell, at the end.
    """
    n = slot.shape[0]
    # a first cheap pass counts the cells, so the arrays are allocated once
    seen = np.full(open_g.shape[0], none, dtype=np.int64)
    cap = 0
    for i in range(n):
        s = slot[i]
        if seen[s] != granule[i]:
            if seen[s] == none and open_g[s] != none and open_g[s] != granule[i]:
                cap += 1
            seen[s] = granule[i]
            cap += 1
    c_slot = np.empty(cap, dtype=np.int64)
    c_g = np.empty(cap, dtype=np.int64)
    raw = np.empty((cap, 10), dtype=np.float64)  # n, sum, min, max, K, S1, S2, T1, T2, TV
    prior = np.empty(cap, dtype=np.int64)  # slot whose open cell this cell continues, or -1
    copied = np.empty(cap, dtype=np.bool_)  # the cell is an open cell emitted as it was
    cur = np.full(open_g.shape[0], -1, dtype=np.int64)
    m = 0
    # the current cell's sums live in locals while consecutive rows share it (a busy key, or
    # rows grouped by key): the loop then keeps them in registers
    held = -1
    kn = sm = mn = mx = base = s1 = s2 = t1 = t2 = tv = 0.0
    for i in range(n):
        s = slot[i]
        g = granule[i]
        if held < 0 or c_slot[held] != s or c_g[held] != g:
            if held >= 0:
                raw[held, 0] = kn
                raw[held, 1] = sm
                raw[held, 2] = mn
                raw[held, 3] = mx
                raw[held, 5] = s1
                raw[held, 6] = s2
                raw[held, 7] = t1
                raw[held, 8] = t2
                raw[held, 9] = tv
            c = cur[s]
            if c < 0 or c_g[c] != g:
                continues = -1
                if c < 0 and open_g[s] != none:
                    if open_g[s] == g:
                        continues = s
                    else:
                        c_slot[m] = s
                        c_g[m] = open_g[s]
                        prior[m] = s
                        copied[m] = True
                        m += 1
                    open_g[s] = none
                c_slot[m] = s
                c_g[m] = g
                prior[m] = continues
                copied[m] = False
                raw[m, 0] = 0.0
                raw[m, 1] = 0.0
                raw[m, 2] = np.inf
                raw[m, 3] = -np.inf
                raw[m, 4] = value[i] if n_fields > 1 else 0.0
                for f in range(5, 10):
                    raw[m, f] = 0.0
                c = m
                cur[s] = m
                m += 1
            held = c
            kn = raw[c, 0]
            sm = raw[c, 1]
            mn = raw[c, 2]
            mx = raw[c, 3]
            base = raw[c, 4]
            s1 = raw[c, 5]
            s2 = raw[c, 6]
            t1 = raw[c, 7]
            t2 = raw[c, 8]
            tv = raw[c, 9]
        kn += 1.0
        if n_fields == 1:
            continue
        v = value[i]
        dv = v - base
        dt = float(time[i] - (origin + g * b0))
        sm += v
        mn = min(mn, v)
        mx = max(mx, v)
        s1 += dv
        s2 += dv * dv
        t1 += dt
        t2 += dt * dt
        tv += dt * dv
    if held >= 0:
        raw[held, 0] = kn
        raw[held, 1] = sm
        raw[held, 2] = mn
        raw[held, 3] = mx
        raw[held, 5] = s1
        raw[held, 6] = s2
        raw[held, 7] = t1
        raw[held, 8] = t2
        raw[held, 9] = tv
    cells = np.empty((m, n_fields), dtype=np.float64)
    for c in range(m):
        if copied[c]:
            cells[c] = open_cells[prior[c]]
            continue
        k = raw[c, 0]
        cells[c, N] = k
        if n_fields > 1:
            cells[c, SUM] = raw[c, 1]
            cells[c, MIN] = raw[c, 2]
            cells[c, MAX] = raw[c, 3]
        if n_fields > BASIC_FIELDS:
            s1 = raw[c, 5]
            t1 = raw[c, 7]
            cells[c, MV] = raw[c, 4] + s1 / k
            cells[c, SVV] = max(0.0, raw[c, 6] - s1 * s1 / k)
            cells[c, MT] = t1 / k
            cells[c, STT] = max(0.0, raw[c, 8] - t1 * t1 / k)
            cells[c, STV] = raw[c, 9] - t1 * s1 / k
        if prior[c] >= 0:
            merged = open_cells[prior[c]].copy()
            merge_into(merged, cells[c], 0.0)
            cells[c] = merged
    return c_slot[:m], c_g[:m], cells


@numba.njit(cache=True)
def merge_cells(slot, granule, src, open_g, open_cells, none):  # pragma: no cover - compiled
    """Like :func:`rows_to_cells` for pre-aggregated input cells (one per row)."""
    n = slot.shape[0]
    n_fields = src.shape[1]
    c_slot = np.empty(n + open_g.shape[0], dtype=np.int64)
    c_g = np.empty(n + open_g.shape[0], dtype=np.int64)
    cells = np.empty((n + open_g.shape[0], n_fields), dtype=np.float64)
    cur = np.full(open_g.shape[0], -1, dtype=np.int64)
    m = 0
    for i in range(n):
        s = slot[i]
        g = granule[i]
        c = cur[s]
        if c < 0 and open_g[s] != none:
            c_slot[m] = s
            c_g[m] = open_g[s]
            cells[m] = open_cells[s]
            open_g[s] = none
            c = m
            cur[s] = m
            m += 1
        if c < 0 or c_g[c] != g:
            c_slot[m] = s
            c_g[m] = g
            cells[m] = src[i]
            cur[s] = m
            m += 1
        else:
            merge_into(cells[c], src[i], 0.0)
    return c_slot[:m], c_g[:m], cells[:m]
