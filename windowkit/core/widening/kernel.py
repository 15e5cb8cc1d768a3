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


STORE_COLUMNS = ("slot", "seq", "time", "ord", "feat")


def append_rows(pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n_slots: int,
                buffers: dict, length: int, next_seq: np.ndarray, last_time: np.ndarray,
                ties: np.ndarray) -> dict | None:
    """Append the rows of ``pieces`` (each ``(slot, time, feat)``, together sorted by time) to
    the stored rows ``buffer[:length]`` of each of :data:`STORE_COLUMNS`, in (slot, time)
    order, numbered (see :func:`number_rows`). Returns the buffers (the same ones while they
    have room), or None (nothing changed) if a key has two of the rows at one time: those need
    ordering by content.

    Examples
    --------
    >>> buffers = {name: np.zeros(0, np.int64) for name in STORE_COLUMNS}
    >>> buffers["feat"] = np.zeros((0, 1), np.int64)
    >>> nxt, last, ties = np.zeros(2, np.int64), np.full(2, -1, np.int64), np.zeros(2, np.int64)
    >>> piece = (np.array([1, 0, 1]), np.array([3, 4, 5]), np.array([[7], [8], [9]]))
    >>> new = append_rows([piece], 2, buffers, 0, nxt, last, ties)
    >>> new["slot"][:3].tolist(), new["time"][:3].tolist(), new["seq"][:3].tolist(), nxt.tolist()
    ([0, 1, 1], [4, 3, 5], [0, 0, 1], [1, 2])
    >>> append_rows([(np.array([0, 0]), np.array([6, 6]), np.zeros((2, 1), np.int64))], 2,
    ...             new, 3, nxt, last, ties) is None
    True
    """
    width = buffers["feat"].shape[1]
    parts = [p for p in pieces if len(p[0])] or [pieces[0]]
    if len(parts) == 1:
        empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, width), np.int64))
        parts = [empty, parts[0]]
    (a_slot, a_time, a_feat), (b_slot, b_time, b_feat) = parts
    bufs = [buffers[name] for name in STORE_COLUMNS]
    n = len(a_slot) + len(b_slot)
    if length + n > len(bufs[0]) or not all(
            b.flags.writeable and b.flags.c_contiguous and b.dtype == np.int64 for b in bufs):
        # twice the room needed, the stored rows copied (a batch then writes only its rows)
        size = 2 * (length + n)
        grown = []
        for b in bufs:
            new = np.empty((size, *b.shape[1:]), dtype=np.int64)
            new[:length] = b[:length]
            grown.append(new)
        bufs = grown
    out = _append(np.ascontiguousarray(a_slot, np.int64), np.ascontiguousarray(a_time, np.int64),
                  np.ascontiguousarray(a_feat, np.int64), np.ascontiguousarray(b_slot, np.int64),
                  np.ascontiguousarray(b_time, np.int64), np.ascontiguousarray(b_feat, np.int64),
                  n_slots, length, *bufs, next_seq, last_time, ties)
    if not out[0]:
        return None
    return dict(zip(STORE_COLUMNS, out[1:], strict=True))


def compact_rows(live: np.ndarray, store: dict) -> None:
    """Move the stored rows ``live`` (ascending) to the front of each column, in place.

    Examples
    --------
    >>> store = {name: np.arange(4) for name in STORE_COLUMNS}
    >>> store["feat"] = np.arange(8).reshape(4, 2)
    >>> compact_rows(np.array([1, 3]), store)
    >>> store["time"][:2].tolist(), store["feat"][:2].tolist()
    ([1, 3], [[2, 3], [6, 7]])
    """
    _compact_rows(np.asarray(live, np.int64), *(store[name] for name in STORE_COLUMNS))


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
def _append(a_slot, a_time, a_feat, b_slot, b_time, b_feat, n_slots, m, slot, seq, time,
            ordinal, feat, next_seq, last_time, ties):  # pragma: no cover - compiled
    # the buffers have room for the rows (the caller grows them)
    n_a = len(a_slot)
    n = n_a + len(b_slot)
    width = feat.shape[1]
    # rows are read in time order and written to their place in (slot, time) order: per key,
    # time order is the order of its rows, so numbering can follow the reading
    start = np.zeros(n_slots + 1, dtype=np.int64)
    seen_time = np.empty(n_slots, dtype=np.int64)
    for i in range(n):
        s, t = (a_slot[i], a_time[i]) if i < n_a else (b_slot[i - n_a], b_time[i - n_a])
        if start[s + 1] and seen_time[s] == t:
            # two rows of a key at one time: the caller orders them by content
            return False, slot, seq, time, ordinal, feat
        seen_time[s] = t
        start[s + 1] += 1
    start[0] = m
    for s in range(n_slots):
        start[s + 1] += start[s]
    for i in range(n):
        if i < n_a:
            s, t = a_slot[i], a_time[i]
            j = start[s]
            for c in range(width):
                feat[j, c] = a_feat[i, c]
        else:
            s, t = b_slot[i - n_a], b_time[i - n_a]
            j = start[s]
            for c in range(width):
                feat[j, c] = b_feat[i - n_a, c]
        start[s] += 1
        slot[j] = s
        time[j] = t
        seq[j] = next_seq[s]
        next_seq[s] += 1
        if t == last_time[s]:  # ties with the key's rows of earlier batches
            ordinal[j] = ties[s]
            ties[s] += 1
        else:
            ordinal[j] = 0
            ties[s] = 1
            last_time[s] = t
    return True, slot, seq, time, ordinal, feat


@numba.njit(cache=True)
def _compact_rows(live, slot, seq, time, ordinal, feat):  # pragma: no cover - compiled
    for j in range(len(live)):
        i = live[j]  # >= j: moving rows forward never overwrites one still to move
        slot[j] = slot[i]
        seq[j] = seq[i]
        time[j] = time[i]
        ordinal[j] = ordinal[i]
        for c in range(feat.shape[1]):
            feat[j, c] = feat[i, c]


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
    # (arrays grown together are rows of one array: fewer arrays to grow compile faster)
    op = np.empty((3, cap), np.int64)  # reference, partial flag, level
    n_op = 0
    oh = np.empty((3, cap), np.int64)
    n_oh = 0
    w = np.empty((6, 16), np.int64)  # slot, level, start, piece, lo, hi
    n_w = 0
    given = np.empty(16, np.int64)
    n_given = 0
    # per-key scratch, two of each: a level's window table (held rows, then the rows it
    # closes) is built while the table of the level below still holds this level's input
    # tab[x, 0]: stored row; tab[x, 1]: bit 0, its batch misses rows; bit 1, it is relevant
    tab = np.empty((2, 2, 64), np.int64)
    rel_at = np.empty(64, np.int64)  # table positions of the relevant rows
    # the table's batches (groups): rows lo..hi, batch, any partial row, relevant rows
    grp = np.empty((6, 64), np.int64)  # lo, hi, batch, any partial row, relevant rows lo, hi
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
            n_max = n_h + n_p + n_c
            if tab.shape[2] < n_max:
                tab = _grow_tables(tab, n_max)
                rel_at = _grow(rel_at, n_max)
                grp = _grow_rows(grp, n_max)
            if n_op + n_p + n_c > op.shape[1]:
                op = _grow_rows(op, n_op + n_p + n_c)
            tr = tab[cur, 0]
            tp = tab[cur, 1]
            # the table: held rows, then the input rows (pending, then closed below) whose
            # batch ends by the bound; the other input rows stay pending. Groups (batches)
            # are closed as the next one starts, truncated then above level 0.
            n_t = 0
            n_g = 0
            n_rel = 0
            for i in range(n_h + n_p + n_c):
                if i < n_h:
                    r = h_refs[h_start + i]
                    flag = h_part[h_start + i] | (2 if rel[r] != 0 else 0)
                elif i < n_h + n_p:
                    r = p_refs[p_start + i - n_h]
                    flag = p_part[p_start + i - n_h] | (2 if rel[r] != 0 else 0)
                else:
                    r = tab[prev, 0, c_lo + i - n_h - n_p]
                    flag = tab[prev, 1, c_lo + i - n_h - n_p]
                b = cell[r] >> k
                if i >= n_h and b + 1 > last_cell:
                    op[0, n_op] = r
                    op[1, n_op] = flag & 1
                    op[2, n_op] = k
                    n_op += 1
                    continue
                if n_g == 0 or b != grp[2, n_g - 1]:
                    if n_g:
                        n_t, n_rel = _end_group(tr, tp, rel_at, n_t, n_rel, grp, n_g - 1, k,
                                                length)
                    grp[0, n_g] = n_t
                    grp[2, n_g] = b
                    grp[3, n_g] = 0
                    g_old = i < n_h
                    grp[4, n_g] = g_old  # whether the group is held (made by a previous call)
                    n_g += 1
                tr[n_t] = r
                tp[n_t] = flag
                grp[3, n_g - 1] |= flag & 1
                n_t += 1
            if n_g == 0:
                c_lo = c_hi = 0
                continue
            n_t, n_rel = _end_group(tr, tp, rel_at, n_t, n_rel, grp, n_g - 1, k, length)
            c_lo, c_hi = n_h, n_t  # the next level's input: the closed rows, as truncated
            table_at = -1  # where the table's relevant rows start in ``given``, once copied
            for g in range(n_g):
                b = grp[2, g]
                same_next = g + 1 < n_g and grp[2, g + 1] == b + 1
                same_prev = g > 0 and grp[2, g - 1] == b - 1
                due = b + 2 <= last_cell
                # windows (b, b+1) of two batches with rows, (b-1, b) and (b, b+1) of one
                for kind in range(3):
                    if kind == 0:
                        if not same_next:
                            continue
                        lo, hi, start, last = grp[0, g], grp[1, g + 1], b, g + 1
                    elif kind == 1:
                        if grp[0, g] < n_h or same_prev:  # only a new batch has a leading window
                            continue
                        lo, hi, start, last = grp[0, g], grp[1, g], b - 1, g
                    else:
                        if same_next or not due:
                            continue
                        lo, hi, start, last = grp[0, g], grp[1, g], b, g
                    if k >= 1 and report_first:
                        # a window with all its interval's rows, lying within one lower-level
                        # window, holds exactly that window's rows: it found the same matches
                        complete = grp[3, g] == 0 and grp[3, last] == 0
                        narrow = (cell[tr[hi - 1]] >> (k - 1)) - (cell[tr[lo]] >> (k - 1)) <= 1
                        if complete and narrow:
                            stats[0] += 1
                            continue
                    n_pieces = 1
                    if k == 0 and base_chunks and hi - lo > 2 * step:
                        n_pieces = -(-(hi - lo - 2 * step) // step) + 1
                    ra = grp[4, g]
                    for p in range(n_pieces):
                        a = lo + p * step
                        z = hi
                        rz = grp[5, last]
                        if n_pieces > 1:
                            z = min(a + 2 * step, hi)
                            while ra < rz and rel_at[ra] < a:
                                ra += 1
                            rz = ra
                            while rz < grp[5, last] and rel_at[rz] < z:
                                rz += 1
                        records_given[k] += z - a
                        windows_run[k] += 1
                        if z - a > stats[1]:
                            stats[1] = z - a
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
                        if n_w == w.shape[1]:
                            w = _grow_rows(w, n_w + 1)
                        w[0, n_w] = s
                        w[1, n_w] = k
                        w[2, n_w] = start * (base << k)
                        w[3, n_w] = p
                        w[4, n_w] = table_at + ra
                        w[5, n_w] = table_at + rz
                        n_w += 1
            # the key's last batch waits for its successor unless its trailing window ran
            if not grp[2, n_g - 1] + 2 <= last_cell:
                a, z = grp[0, n_g - 1], grp[1, n_g - 1]
                if n_oh + z - a > oh.shape[1]:
                    oh = _grow_rows(oh, n_oh + z - a)
                for i in range(a, z):
                    oh[0, n_oh] = tr[i]
                    oh[1, n_oh] = tp[i] & 1
                    oh[2, n_oh] = k
                    n_oh += 1
    np_r, np_p, np_off = _by_level(op[0], op[1], op[2], n_op, levels)
    nh_r, nh_p, nh_off = _by_level(oh[0], oh[1], oh[2], n_oh, levels)
    return (np_r, np_p, np_off, nh_r, nh_p, nh_off, w[0, :n_w].copy(), w[1, :n_w].copy(),
            w[2, :n_w].copy(), w[3, :n_w].copy(), w[4, :n_w].copy(), w[5, :n_w].copy(),
            given[:n_given])


@numba.njit(cache=True)
def _end_group(tr, tp, rel_at, n_t, n_rel, grp, g, k, length):  # pragma: no cover - compiled
    """Close group ``g`` (rows ``grp[0, g]..n_t`` of the table): above level 0 a new batch of
    over 2L rows keeps its first and last L (Algorithm 2), and a batch missing rows flags all
    its rows. Lists its relevant rows; returns the table's and the relevant rows' new ends."""
    lo = grp[0, g]
    held = grp[4, g] == 1
    if k >= 1 and not held:
        size = n_t - lo
        if size > 2 * length:
            for i in range(length):
                tr[lo + length + i] = tr[n_t - length + i]
                tp[lo + length + i] = tp[n_t - length + i]
            n_t = lo + 2 * length
            grp[3, g] = 1
        if grp[3, g]:
            for i in range(lo, n_t):
                tp[i] |= 1
    grp[1, g] = n_t
    grp[4, g] = n_rel
    for i in range(lo, n_t):
        if tp[i] & 2:
            rel_at[n_rel] = i
            n_rel += 1
    grp[5, g] = n_rel
    return n_t, n_rel


@numba.njit(cache=True)
def _grow_tables(t, n):  # pragma: no cover - compiled
    """Grow the scratch tables to at least ``n`` rows, keeping their content."""
    new = np.empty((t.shape[0], t.shape[1], max(n, 2 * t.shape[2])), np.int64)
    new[:, :, : t.shape[2]] = t
    return new


@numba.njit(cache=True)
def _grow_rows(a, n):  # pragma: no cover - compiled
    """Grow the rows of a 2-d array to at least ``n`` entries, keeping their content."""
    new = np.empty((a.shape[0], max(n, 2 * a.shape[1])), np.int64)
    new[:, : a.shape[1]] = a
    return new
