"""The stairwise chain (the paper's Fig. 2), one per key, holding cells instead of rows.

Time is counted in *finest granules*: granule ``g`` holds the instants
``(t0 + (g - 1) b_0, t0 + g b_0]``, so level ``k`` (range ``n_k`` granules, slide ``r_k``
granules) reports at every granule ``G`` with ``G mod r_k = 0``, over granules
``(G - n_k, G]``: the scope of :mod:`windowkit.core.multigranular.aggregator` at
``tc = t0 + G b_0``.

Level ``k`` keeps one queue of cells (its core node ``g_k`` with the buffer ``d_k`` as its
tail). Level 0's cells are finest granules. When level ``k - 1`` slides at ``G`` it shifts the
cells that left its range (those ending at or before ``G - n_(k-1)``) into level ``k``, where
they are merged into cells of ``s_k = gcd(r_k, n_(k-1))`` granules; since ``r_(k-1)`` divides
``s_k``, no cell is ever cut, and since ``G - n_(k-1)`` is a multiple of ``s_k`` whenever level
``k`` slides, the queue then covers exactly ``(G - n_k, G - n_(k-1)]`` (the paper's disjoint
interval ``[t_k, t_(k-1))``) once level ``k`` has dropped what left its own range. With the
paper's usual specs (``w_(k-1)`` a multiple of ``b_k``), ``s_k = r_k``: the paper's granules.

A report of level ``k`` is level ``k - 1``'s report at the same instant merged with level
``k``'s queue: every row is folded into a cell once, every cell is shifted at most once per
level, and no row is ever duplicated. Only cells holding rows are stored, so a key that is idle
costs nothing until its next row; the chain is stepped only at instants where some level holds
data or has a report due.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from windowkit.core.multigranular.cells import MAX, MIN, SUM, N, merge_into
from windowkit.core.multigranular.spec import MultiGranularSpec

#: Sentinel granule: "none".
NONE = np.iinfo(np.int64).min


class ChainLayout:
    """Per-level granule counts and queue capacities of a specification.

    Examples
    --------
    >>> from windowkit.core.multigranular.spec import MultiGranularSpec
    >>> lay = ChainLayout(MultiGranularSpec.parse(
    ...     "RANGES 1 HOUR, 10 MINUTES, 1 MINUTE SLIDES 5 MINUTES, 1 MINUTE, 1 SECOND"))
    >>> lay.n.tolist(), lay.r.tolist(), lay.s.tolist(), lay.cap.tolist()
    ([60, 600, 3600], [1, 60, 300], [1, 60, 300], [61, 12, 13])
    """

    def __init__(self, spec: MultiGranularSpec) -> None:
        b0 = spec.finest_slide
        self.n = np.array([lv.range // b0 for lv in spec.levels], dtype=np.int64)
        self.r = np.array([lv.slide // b0 for lv in spec.levels], dtype=np.int64)
        s = [1]
        for k in range(1, spec.n_levels):
            s.append(math.gcd(int(self.r[k]), int(self.n[k - 1])))
        self.s = np.array(s, dtype=np.int64)
        cap = [int(self.n[0]) + 1]
        for k in range(1, spec.n_levels):
            cap.append(int((self.n[k] - self.n[k - 1] + self.r[k]) // self.s[k]) + 2)
        self.cap = np.array(cap, dtype=np.int64)
        self.off = np.concatenate([[0], np.cumsum(self.cap)[:-1]]).astype(np.int64)
        self.total = int(self.cap.sum())


@numba.njit(cache=True)
def _grow(out_i, out_f, out_x, m):  # pragma: no cover - compiled
    cap = 2 * out_i.shape[0] + 16
    i2 = np.empty((cap, out_i.shape[1]), dtype=np.int64)
    f2 = np.empty((cap, out_f.shape[1]), dtype=np.float64)
    x2 = np.empty((cap, out_x.shape[1]), dtype=np.float64)
    i2[:m] = out_i[:m]
    f2[:m] = out_f[:m]
    x2[:m] = out_x[:m]
    return i2, f2, x2


# The helpers below are compiled without numba's reference counting (they allocate nothing):
# inlined into run_chain, every array they take was counted up and down, atomically, at each
# call, which took half the kernel's time (run_chain 0.38 -> 0.19 s on 580,000 cells of 1,000
# keys, 1 M reports).
@numba.njit(cache=True, _nrt=False)
def _push(ring, ring_end, head, size, s, k, end, cell, lay_s, off, cap, b0):  # pragma: no cover
    """Append (or merge into the tail) a cell ending at finest granule ``end`` at level k."""
    e2 = -((-end) // lay_s[k]) * lay_s[k]
    shift = float((end - e2) * b0)
    if size[s, k] > 0:
        tail = off[k] + (head[s, k] + size[s, k] - 1) % cap[k]
        if ring_end[s, tail] == e2:
            merge_into(ring[s, tail], cell, shift)
            return 0
    if size[s, k] == cap[k]:
        return 1
    pos = off[k] + (head[s, k] + size[s, k]) % cap[k]
    ring[s, pos, 0] = 0.0
    merge_into(ring[s, pos], cell, shift)
    ring_end[s, pos] = e2
    size[s, k] += 1
    return 0


@numba.njit(cache=True)
def run_chain(c_slot, c_g, cells, frontier_g, ring, ring_end, head, size, last_g, done_g,
              open_g, open_cells, lay_n, lay_r, lay_s, off, cap, weights, b0,
              all_keys, full):  # pragma: no cover - compiled
    """Feed cells (grouped by slot, each slot's in granule order) through the chains.

    Cells at granules up to ``frontier_g`` are complete and enter the chain; a later one is
    kept as the key's open cell. Then every key (``all_keys``) or every key with a cell is
    stepped to ``frontier_g``, emitting every report due; without ``full`` reports carry only
    count, sum, min and max (the centred moments are not merged). Returns ``(ints, floats,
    extras, m, error)``: report rows (slot, level, granule), their cells, (decayed sum,
    decayed count, present in every disjoint interval) and their number; ``error`` is 1 on an
    overflow.
    """
    n_levels = lay_n.shape[0]
    n_fields = ring.shape[2]
    # room for two reports per cell: growing copies every report made so far (a tenth of
    # the kernel's time on a dense stream), and untouched room costs no memory
    first = 2 * c_slot.shape[0] + 64
    out_i = np.empty((first, 3), dtype=np.int64)
    out_f = np.empty((first, n_fields), dtype=np.float64)
    out_x = np.empty((first, 3), dtype=np.float64)
    m = 0
    acc = np.empty(n_fields, dtype=np.float64)
    part = np.empty(n_fields, dtype=np.float64)
    i = 0
    n_cells = c_slot.shape[0]
    n_keys = last_g.shape[0]
    touched = np.zeros(n_keys, dtype=np.bool_)
    key_index = 0
    while True:
        # the next key: one with cells, else (after the cells) every other key
        if i < n_cells:
            s = c_slot[i]
            j = i
            while j < n_cells and c_slot[j] == s:
                j += 1
        else:
            if not all_keys:
                break
            while key_index < n_keys and touched[key_index]:
                key_index += 1
            if key_index >= n_keys:
                break
            s = key_index
            key_index += 1
            j = i
        touched[s] = True
        targets_end = j - i + 1
        for q in range(targets_end):
            is_cell = q < j - i
            if is_cell:
                g = c_g[i + q]
                if g > frontier_g:
                    open_g[s] = g
                    open_cells[s] = cells[i + q]
                    continue
                if done_g[s] != NONE and g <= done_g[s]:
                    return out_i, out_f, out_x, m, 2
                target = g - 1
            else:
                target = frontier_g
            # step the chain through every instant in (done_g, target] where something is due
            if last_g[s] != NONE:
                c = done_g[s]
                while True:
                    gn = np.iinfo(np.int64).max
                    for k in range(n_levels):
                        nm = (c // lay_r[k] + 1) * lay_r[k]
                        if (size[s, k] > 0 or nm < last_g[s] + lay_n[k]) and nm < gn:
                            gn = nm
                    if gn > target:
                        break
                    top = _slide(s, gn, ring, ring_end, head, size, lay_n, lay_r, lay_s, off,
                                 cap, b0)
                    if top < 0:
                        return out_i, out_f, out_x, m, 1
                    if m + n_levels > out_i.shape[0]:
                        out_i, out_f, out_x = _grow(out_i, out_f, out_x, m)
                    m = _fill(s, gn, top, ring, ring_end, head, size, last_g, lay_n, off, cap,
                              weights, b0, acc, part, out_i, out_f, out_x, m, full)
                    c = gn
            if done_g[s] == NONE or target > done_g[s]:
                done_g[s] = target
            if is_cell:
                if _push(ring, ring_end, head, size, s, 0, g, cells[i + q], lay_s, off, cap,
                         b0):
                    return out_i, out_f, out_x, m, 1
                last_g[s] = g
                top = _slide(s, g, ring, ring_end, head, size, lay_n, lay_r, lay_s, off, cap,
                             b0)
                if top < 0:
                    return out_i, out_f, out_x, m, 1
                if m + n_levels > out_i.shape[0]:
                    out_i, out_f, out_x = _grow(out_i, out_f, out_x, m)
                m = _fill(s, g, top, ring, ring_end, head, size, last_g, lay_n, off, cap,
                          weights, b0, acc, part, out_i, out_f, out_x, m, full)
                done_g[s] = g
        i = j
    return out_i, out_f, out_x, m, 0


@numba.njit(cache=True, _nrt=False)
def _slide(s, G, ring, ring_end, head, size, lay_n, lay_r, lay_s, off, cap,
           b0):  # pragma: no cover - compiled
    """Slide every level due at granule ``G``, bottom-up: each shifts the cells that left its
    range into the next level. Returns how many levels slide (0..top-1), or -1 on overflow."""
    n_levels = lay_n.shape[0]
    top = 0
    while top < n_levels and G % lay_r[top] == 0:
        top += 1
    for k in range(top):
        lim = G - lay_n[k]
        while size[s, k] > 0:
            pos = off[k] + head[s, k]
            if ring_end[s, pos] > lim:
                break
            if k + 1 < n_levels:
                if _push(ring, ring_end, head, size, s, k + 1, ring_end[s, pos], ring[s, pos],
                         lay_s, off, cap, b0):
                    return -1
            head[s, k] = 0 if head[s, k] + 1 == cap[k] else head[s, k] + 1
            size[s, k] -= 1
    return top


@numba.njit(cache=True, _nrt=False)
def _fill(s, G, top, ring, ring_end, head, size, last_g, lay_n, off, cap, weights, b0, acc,
          part, out_i, out_f, out_x, m, full):  # pragma: no cover - compiled
    """Append the reports at ``G`` of the sliding levels whose range holds a row.

    A level's range holds a row iff it holds the key's last row (``G - n_k < last_g``); the
    ranges nest, so those levels are a top run of the sliding ones. Returns the new row count.
    """
    n_fields = ring.shape[2]
    acc[0] = 0.0
    dec_sum = 0.0
    dec_n = 0.0
    present = 1.0
    basic = n_fields > 1 and not full
    if basic:
        acc[SUM] = 0.0
        acc[MIN] = np.inf
        acc[MAX] = -np.inf
    for k in range(top):
        part[0] = 0.0
        if basic:  # count, sum, min, max: a few flops per cell instead of the moments' merge
            part[SUM] = 0.0
            part[MIN] = np.inf
            part[MAX] = -np.inf
            pos = off[k] + head[s, k]
            wrap = off[k] + cap[k]
            for _ in range(size[s, k]):
                cell = ring[s, pos]
                pos += 1
                if pos == wrap:  # a compare, not a division, per cell of the hot loop
                    pos = off[k]
                part[N] += cell[N]
                part[SUM] += cell[SUM]
                part[MIN] = min(part[MIN], cell[MIN])
                part[MAX] = max(part[MAX], cell[MAX])
            acc[N] += part[N]
            acc[SUM] += part[SUM]
            acc[MIN] = min(acc[MIN], part[MIN])
            acc[MAX] = max(acc[MAX], part[MAX])
        else:
            for q in range(size[s, k]):
                pos = off[k] + (head[s, k] + q) % cap[k]
                merge_into(part, ring[s, pos], float((ring_end[s, pos] - G) * b0))
            merge_into(acc, part, 0.0)
        if part[N] == 0.0:
            present = 0.0
        dec_n += weights[k] * part[N]
        if n_fields > 1 and part[N] > 0.0:
            dec_sum += weights[k] * part[SUM]
        if G - lay_n[k] >= last_g[s]:
            continue
        out_i[m, 0] = s
        out_i[m, 1] = k
        out_i[m, 2] = G
        for f in range(n_fields):
            out_f[m, f] = acc[f]
        out_x[m, 0] = dec_sum
        out_x[m, 1] = dec_n
        out_x[m, 2] = present
        m += 1
    return m
