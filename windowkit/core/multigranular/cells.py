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
``MT`` by the difference. A count-only cell (recurring items) has just ``N``.
"""

from __future__ import annotations

import numba
import numpy as np

N, SUM, MIN, MAX, MV, SVV, MT, STT, STV = range(9)
#: Number of fields of a full cell.
N_FIELDS = 9


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
    """
    n = slot.shape[0]
    cap = 16
    c_slot = np.empty(cap, dtype=np.int64)
    c_g = np.empty(cap, dtype=np.int64)
    cells = np.empty((cap, n_fields), dtype=np.float64)
    cur = np.full(open_g.shape[0], -1, dtype=np.int64)
    m = 0
    for i in range(n):
        s = slot[i]
        g = granule[i]
        c = cur[s]
        if c < 0 or c_g[c] != g:
            need = 2 if (c < 0 and open_g[s] != none and open_g[s] != g) else 1
            if m + need > cap:
                cap = 2 * cap + need
                c_slot2 = np.empty(cap, dtype=np.int64)
                c_g2 = np.empty(cap, dtype=np.int64)
                cells2 = np.empty((cap, n_fields), dtype=np.float64)
                c_slot2[:m] = c_slot[:m]
                c_g2[:m] = c_g[:m]
                cells2[:m] = cells[:m]
                c_slot, c_g, cells = c_slot2, c_g2, cells2
            if c < 0 and open_g[s] != none:
                c_slot[m] = s
                c_g[m] = open_g[s]
                cells[m] = open_cells[s]
                m += 1
                open_g[s] = none
                if c_g[m - 1] == g:
                    cur[s] = m - 1
                    c = m - 1
            if c < 0 or c_g[c] != g:
                c_slot[m] = s
                c_g[m] = g
                cells[m, 0] = 0.0
                if n_fields > 1:
                    for f in range(1, n_fields):
                        cells[m, f] = 0.0
                    cells[m, MIN] = np.inf
                    cells[m, MAX] = -np.inf
                cur[s] = m
                c = m
                m += 1
        cell = cells[c]
        k = cell[N] + 1.0
        cell[N] = k
        if n_fields == 1:
            continue
        v = value[i]
        t = float(time[i] - (origin + g * b0))
        cell[SUM] += v
        if v < cell[MIN]:
            cell[MIN] = v
        if v > cell[MAX]:
            cell[MAX] = v
        dv = v - cell[MV]
        dt = t - cell[MT]
        cell[MV] += dv / k
        cell[MT] += dt / k
        cell[SVV] += dv * (v - cell[MV])
        cell[STT] += dt * (t - cell[MT])
        cell[STV] += dt * (v - cell[MV])
    return c_slot[:m], c_g[:m], cells[:m]


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
