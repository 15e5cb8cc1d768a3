"""Compiled per-key level machinery of PWW: every level of every key closed in one numba call.

The operator's state is kept as it was in the vectorized version: per level, the rows waiting
for their batch to close (*pending*) and the last closed batch waiting for its successor
(*held*), each a list of references into the stored rows sorted by (key slot, arrival), with a
flag per row telling whether its batch misses rows (truncated here or lower). Closing walks the
key slots in order and, for each key, climbs the levels: the rows a level closes (truncated to
their first and last ``L`` per batch above level 0, Algorithm 2) are the next level's input, so
no level needs a sort or a pass over other keys' rows.
"""

from __future__ import annotations

import numba
import numpy as np

_NO_SLOT = np.iinfo(np.int64).max


def merge_by_slot(slot: np.ndarray, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Merge two reference lists sorted by slot; within a slot ``old`` comes first.

    Examples
    --------
    >>> merge_by_slot(np.array([0, 1, 0, 2]), np.array([0, 1]), np.array([2, 3])).tolist()
    [0, 2, 1, 3]
    """
    return _merge(slot, np.asarray(old, np.int64), np.asarray(new, np.int64))


def order_by_slot(slot: np.ndarray, n_slots: int) -> np.ndarray:
    """The permutation sorting rows by slot, stably (a counting sort).

    Examples
    --------
    >>> order_by_slot(np.array([1, 0, 1, 0]), 2).tolist()
    [1, 3, 0, 2]
    """
    return _counting_order(np.asarray(slot, np.int64), n_slots)


def number_rows(slot: np.ndarray, time: np.ndarray, next_seq: np.ndarray,
                last_time: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-key arrival numbers and ordinals among equal times of rows sorted by (slot, time);
    updates the per-key ``next_seq``, ``last_time`` and ``ties`` in place.

    Examples
    --------
    >>> nxt, last, ties = np.zeros(2, np.int64), np.full(2, -1, np.int64), np.zeros(2, np.int64)
    >>> seq, ordinal = number_rows(np.array([0, 0, 1]), np.array([5, 5, 7]), nxt, last, ties)
    >>> seq.tolist(), ordinal.tolist(), nxt.tolist(), ties.tolist()
    ([0, 1, 0], [0, 1, 0], [2, 1], [2, 1])
    """
    return _number(slot, time, next_seq, last_time, ties)


def close_levels(slot, time, rel, need, pending, held, bound, base, max_length, report_first,
                 base_chunks, records_given, windows_run, stats):
    """Close every level's batches ending by ``bound`` and list the windows to run.

    Parameters
    ----------
    slot, time : numpy.ndarray
        Key slot and time of each stored row.
    rel : numpy.ndarray
        Per stored row, the detector's relevance column (nonzero: the row is given to it), or
        all ones.
    need : int
        A window is given to the detector only if the OR of its rows' ``rel`` holds these bits
        (0: any window with a relevant row).
    pending, held : tuple
        ``(refs, part, offsets)``: the levels' lists concatenated, level k at
        ``offsets[k]:offsets[k + 1]``.
    bound : int
        Rows with ``time < bound`` are all in.
    base, max_length : int
        ``d0`` and ``L``.
    report_first, base_chunks : bool
        The configuration's switches (see :class:`~windowkit.core.widening.WindowWidening`).
    records_given, windows_run, stats : numpy.ndarray
        Counters updated in place: per level, rows given and windows run; ``stats`` holds the
        windows skipped and the most rows of a window.

    Returns
    -------
    tuple
        The new pending and held lists as ``(refs, part, offsets)``, and the windows to run:
        ``(slot, level, start, piece, lo, hi, given)``, window i's rows being the stored rows
        ``given[lo[i]:hi[i]]``.

    Examples
    --------
    Two rows of key 0 at times 1 and 12, one level of batches of 10, all in by time 30:

    >>> empty = (np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(2, np.int64))
    >>> pend = (np.array([0, 1]), np.zeros(2, bool), np.array([0, 2]))
    >>> counts, runs, stats = np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(2, np.int64)
    >>> p, h, w = close_levels(np.array([0, 0]), np.array([1, 12]), np.ones(2, np.int64), 0,
    ...                        pend, empty, 30, 10, 4, True, True, counts, runs, stats)
    >>> starts, lo, hi, given = w[2], w[4], w[5], w[6]  # windows [0, 20), [-10, 10), [10, 30)
    >>> starts.tolist(), [given[a:b].tolist() for a, b in zip(lo, hi)]
    ([0, -10, 10], [[0, 1], [0], [1]])
    >>> counts.tolist(), len(p[0]), len(h[0])
    ([4], 0, 0)
    """
    p_refs, p_part, p_off = pending
    h_refs, h_part, h_off = held
    out = _close(slot, time, rel, np.int64(need), p_refs, p_part.astype(np.int64), p_off,
                 h_refs, h_part.astype(np.int64), h_off, np.int64(bound), np.int64(base),
                 np.int64(max_length), bool(report_first), bool(base_chunks), records_given,
                 windows_run, stats)
    (np_refs, np_part, np_off, nh_refs, nh_part, nh_off, *windows) = out
    return ((np_refs, np_part.astype(bool), np_off), (nh_refs, nh_part.astype(bool), nh_off),
            tuple(windows))


@numba.njit(cache=True)
def _merge(slot, old, new):  # pragma: no cover - compiled
    out = np.empty(len(old) + len(new), dtype=np.int64)
    i = j = n = 0
    while i < len(old) or j < len(new):
        if j == len(new) or (i < len(old) and slot[old[i]] <= slot[new[j]]):
            out[n] = old[i]
            i += 1
        else:
            out[n] = new[j]
            j += 1
        n += 1
    return out


@numba.njit(cache=True)
def _counting_order(slot, n_slots):  # pragma: no cover - compiled
    start = np.zeros(n_slots + 1, dtype=np.int64)
    for s in slot:
        start[s + 1] += 1
    for s in range(n_slots):
        start[s + 1] += start[s]
    out = np.empty(len(slot), dtype=np.int64)
    for i in range(len(slot)):
        out[start[slot[i]]] = i
        start[slot[i]] += 1
    return out


@numba.njit(cache=True)
def _number(slot, time, next_seq, last_time, ties):  # pragma: no cover - compiled
    n = len(slot)
    seq = np.empty(n, dtype=np.int64)
    ordinal = np.empty(n, dtype=np.int64)
    for i in range(n):
        s = slot[i]
        seq[i] = next_seq[s]
        next_seq[s] += 1
        if time[i] == last_time[s]:  # ties with the key's rows of this or earlier batches
            ordinal[i] = ties[s]
            ties[s] += 1
        else:
            ordinal[i] = 0
            ties[s] = 1
            last_time[s] = time[i]
    return seq, ordinal


@numba.njit(cache=True)
def _grow(a, n):  # pragma: no cover - compiled
    if n <= len(a):
        return a
    b = np.empty(max(n, 2 * len(a)), dtype=np.int64)
    b[: len(a)] = a
    return b


@numba.njit(cache=True)
def _by_level(refs, part, level, n, levels):  # pragma: no cover - compiled
    """Stable counting sort of the first ``n`` entries by level, with the level offsets."""
    off = np.zeros(levels + 1, dtype=np.int64)
    for i in range(n):
        off[level[i] + 1] += 1
    for k in range(levels):
        off[k + 1] += off[k]
    at = off[:-1].copy()
    out_refs = np.empty(n, dtype=np.int64)
    out_part = np.empty(n, dtype=np.int64)
    for i in range(n):
        j = at[level[i]]
        out_refs[j] = refs[i]
        out_part[j] = part[i]
        at[level[i]] += 1
    return out_refs, out_part, off


@numba.njit(cache=True)
def _close(slot, time, rel, need, p_refs, p_part, p_off, h_refs, h_part, h_off, bound, base,
           length, report_first, base_chunks, records_given, windows_run,
           stats):  # pragma: no cover - compiled
    levels = len(p_off) - 1
    # level-k batch of a row: floor(time / (base 2**k)) = floor(time / base) >> k
    cell = np.empty(len(time), np.int64)
    for i in range(len(time)):
        cell[i] = time[i] // base
    bound_cell = bound // base
    pc = p_off[:-1].copy()  # per level, the cursor into the slot-sorted lists
    hc = h_off[:-1].copy()
    # outputs: new pending / held entries tagged with their level (sorted by level at the end)
    cap = len(p_refs) + len(h_refs) + 16
    op_r = np.empty(cap, np.int64)
    op_p = np.empty(cap, np.int64)
    op_l = np.empty(cap, np.int64)
    n_op = 0
    oh_r = np.empty(cap, np.int64)
    oh_p = np.empty(cap, np.int64)
    oh_l = np.empty(cap, np.int64)
    n_oh = 0
    w_slot = np.empty(16, np.int64)
    w_level = np.empty(16, np.int64)
    w_start = np.empty(16, np.int64)
    w_piece = np.empty(16, np.int64)
    w_lo = np.empty(16, np.int64)
    w_hi = np.empty(16, np.int64)
    n_w = 0
    given = np.empty(16, np.int64)
    n_given = 0
    # per-key scratch, two of each: a level's window table (held rows, then the rows it
    # closes) is built while the table of the level below still holds this level's input
    t_r = np.empty((2, 64), np.int64)
    t_p = np.empty((2, 64), np.int64)
    t_b = np.empty((2, 64), np.int64)
    rel_at = np.empty(64, np.int64)  # table positions of the relevant rows
    part_before = np.empty(65, np.int64)
    rel_before = np.empty(65, np.int64)
    g_lo = np.empty(64, np.int64)
    g_hi = np.empty(64, np.int64)
    step = 2 * length
    while True:
        s = _NO_SLOT
        for k in range(levels):
            if pc[k] < p_off[k + 1] and slot[p_refs[pc[k]]] < s:
                s = slot[p_refs[pc[k]]]
            if hc[k] < h_off[k + 1] and slot[h_refs[hc[k]]] < s:
                s = slot[h_refs[hc[k]]]
        if s == _NO_SLOT:
            break
        c_lo = 0  # the rows the level below closed: table (k - 1) % 2, rows c_lo..c_hi
        c_hi = 0
        for k in range(levels):
            cur = k % 2
            prev = 1 - cur
            last_cell = bound_cell >> k  # batches b with b + 1 <= last_cell are closed
            p_start = pc[k]
            while pc[k] < p_off[k + 1] and slot[p_refs[pc[k]]] == s:
                pc[k] += 1
            h_start = hc[k]
            while hc[k] < h_off[k + 1] and slot[h_refs[hc[k]]] == s:
                hc[k] += 1
            n_p = pc[k] - p_start
            n_h = hc[k] - h_start
            n_c = c_hi - c_lo
            if n_p + n_h + n_c == 0:
                c_lo = c_hi = 0
                continue
            need_rows = n_h + n_p + n_c
            if t_r.shape[1] < need_rows:
                t_r, t_p, t_b = _grow_tables(t_r, t_p, t_b, need_rows)
            if n_op + n_p + n_c > len(op_r):
                op_r = _grow(op_r, n_op + n_p + n_c)
                op_p = _grow(op_p, n_op + n_p + n_c)
                op_l = _grow(op_l, n_op + n_p + n_c)
            tr = t_r[cur]
            tp = t_p[cur]
            tb = t_b[cur]
            for i in range(n_h):
                r = h_refs[h_start + i]
                tr[i] = r
                tp[i] = h_part[h_start + i]
                tb[i] = cell[r] >> k
            # the input (pending rows, then the rows closed below): the rows whose batch
            # ends by the bound close, the others stay pending
            n_t = n_h
            for i in range(n_p + n_c):
                if i < n_p:
                    r = p_refs[p_start + i]
                    flag = p_part[p_start + i]
                else:
                    r = t_r[prev, c_lo + i - n_p]
                    flag = t_p[prev, c_lo + i - n_p]
                b = cell[r] >> k
                if b + 1 <= last_cell:
                    tr[n_t] = r
                    tp[n_t] = flag
                    tb[n_t] = b
                    n_t += 1
                else:
                    op_r[n_op] = r
                    op_p[n_op] = flag
                    op_l[n_op] = k
                    n_op += 1
            if k >= 1 and n_t > n_h:
                # Algorithm 2: a batch above 2L rows keeps its first and last L
                j = n_h
                i = n_h
                while i < n_t:
                    e = i
                    any_part = 0
                    while e < n_t and tb[e] == tb[i]:
                        any_part |= tp[e]
                        e += 1
                    size = e - i
                    flag = 1 if (size > step or any_part) else 0
                    for t in range(i, e):
                        rank = t - i
                        if rank < length or rank >= size - length:
                            tr[j] = tr[t]
                            tb[j] = tb[t]
                            tp[j] = flag
                            j += 1
                    i = e
                n_t = j
            c_lo, c_hi = n_h, n_t  # the next level's input
            if len(rel_before) < n_t + 1:
                rel_before = _grow(rel_before, n_t + 1)
                part_before = _grow(part_before, n_t + 1)
                rel_at = _grow(rel_at, n_t)
                g_lo = _grow(g_lo, n_t)
                g_hi = _grow(g_hi, n_t)
            rel_before[0] = 0
            part_before[0] = 0
            n_rel = 0
            n_g = 0
            for i in range(n_t):
                if rel[tr[i]] != 0:
                    rel_at[n_rel] = i
                    n_rel += 1
                rel_before[i + 1] = n_rel
                part_before[i + 1] = part_before[i] + tp[i]
                if i == 0 or tb[i] != tb[i - 1]:
                    g_lo[n_g] = i
                    n_g += 1
                g_hi[n_g - 1] = i + 1
            table_at = -1  # where the table's relevant rows start in ``given``, once copied
            for g in range(n_g):
                b = tb[g_lo[g]]
                same_next = g + 1 < n_g and tb[g_lo[g + 1]] == b + 1
                same_prev = g > 0 and tb[g_lo[g - 1]] == b - 1
                due = b + 2 <= last_cell
                # windows (b, b+1) of two batches with rows, (b-1, b) and (b, b+1) of one
                for kind in range(3):
                    if kind == 0:
                        if not same_next:
                            continue
                        lo, hi, start = g_lo[g], g_hi[g + 1], b
                    elif kind == 1:
                        if g_lo[g] < n_h or same_prev:  # only a new batch has a leading window
                            continue
                        lo, hi, start = g_lo[g], g_hi[g], b - 1
                    else:
                        if same_next or not due:
                            continue
                        lo, hi, start = g_lo[g], g_hi[g], b
                    if k >= 1 and report_first:
                        # a window with all its interval's rows, lying within one lower-level
                        # window, holds exactly that window's rows: it found the same matches
                        complete = part_before[hi] == part_before[lo]
                        narrow = (cell[tr[hi - 1]] >> (k - 1)) - (cell[tr[lo]] >> (k - 1)) <= 1
                        if complete and narrow:
                            stats[0] += 1
                            continue
                    n_pieces = 1
                    if k == 0 and base_chunks and hi - lo > 2 * step:
                        n_pieces = -(-(hi - lo - 2 * step) // step) + 1
                    for p in range(n_pieces):
                        a = lo + p * step
                        z = hi if n_pieces == 1 else min(a + 2 * step, hi)
                        records_given[k] += z - a
                        windows_run[k] += 1
                        if z - a > stats[1]:
                            stats[1] = z - a
                        ra, rz = rel_before[a], rel_before[z]
                        if rz == ra:
                            continue
                        if need != 0:
                            seen = np.int64(0)
                            for i in range(ra, rz):
                                seen |= rel[tr[rel_at[i]]]
                            if seen & need != need:
                                continue  # some required bit is absent: no match possible
                        if table_at < 0:
                            table_at = n_given
                            given = _grow(given, n_given + n_rel)
                            for i in range(n_rel):
                                given[n_given + i] = tr[rel_at[i]]
                            n_given += n_rel
                        if n_w == len(w_lo):
                            w_slot = _grow(w_slot, n_w + 1)
                            w_level = _grow(w_level, n_w + 1)
                            w_start = _grow(w_start, n_w + 1)
                            w_piece = _grow(w_piece, n_w + 1)
                            w_lo = _grow(w_lo, n_w + 1)
                            w_hi = _grow(w_hi, n_w + 1)
                        w_slot[n_w] = s
                        w_level[n_w] = k
                        w_start[n_w] = start * (base << k)
                        w_piece[n_w] = p
                        w_lo[n_w] = table_at + ra
                        w_hi[n_w] = table_at + rz
                        n_w += 1
            # the key's last batch waits for its successor unless its trailing window ran
            if n_g and not tb[g_lo[n_g - 1]] + 2 <= last_cell:
                a, z = g_lo[n_g - 1], g_hi[n_g - 1]
                if n_oh + z - a > len(oh_r):
                    oh_r = _grow(oh_r, n_oh + z - a)
                    oh_p = _grow(oh_p, n_oh + z - a)
                    oh_l = _grow(oh_l, n_oh + z - a)
                for i in range(a, z):
                    oh_r[n_oh] = tr[i]
                    oh_p[n_oh] = tp[i]
                    oh_l[n_oh] = k
                    n_oh += 1
    np_r, np_p, np_off = _by_level(op_r, op_p, op_l, n_op, levels)
    nh_r, nh_p, nh_off = _by_level(oh_r, oh_p, oh_l, n_oh, levels)
    return (np_r, np_p, np_off, nh_r, nh_p, nh_off, w_slot[:n_w], w_level[:n_w],
            w_start[:n_w], w_piece[:n_w], w_lo[:n_w], w_hi[:n_w], given[:n_given])


@numba.njit(cache=True)
def _grow_tables(t_r, t_p, t_b, n):  # pragma: no cover - compiled
    """Grow the two-row scratch tables to at least ``n`` columns, keeping their content."""
    size = max(n, 2 * t_r.shape[1])
    out = []
    for t in (t_r, t_p, t_b):
        new = np.empty((2, size), np.int64)
        new[:, : t.shape[1]] = t
        out.append(new)
    return out[0], out[1], out[2]
