"""Numba kernels shared by the exact algorithm and the two sketches.

Items live in an open-addressing hash table (linear probing) that maps the item's 64-bit hash to
a stable *entry id*; per-entry fields are plain numpy arrays indexed by the id. Kernels run over a
batch of ``(item hash, slot)`` rows already in non-decreasing slot order and stop early
(returning the row to resume from) when an array must grow, so that all allocation happens in
Python and the kernels stay simple.

Two table layouts share one allocation rule (a uint64 array of ``2 * size`` elements, grown
when the live entries reach a quarter of its elements), so they take the same bytes:

* *pair tables* hold ``[key, id + 1]`` pairs (at most half full) and delete by backward
  shift; the sliding window uses them, and so does the fixed window when every item is
  tracked (the naive algorithm, or a sketch with ``tau >= 1``);
* *word tables* hold one word per slot, the key's high 32 bits over ``id + 1`` (at most a
  quarter full), and check the full key in ``ekey``; a sampling fixed-window instance uses
  them. A persistent item is sampled within about ``1 / tau`` of its slots, so past its first
  few hundred slots such an instance tracks mostly persistent, hot items: in a pair table
  about one hot lookup in six lands behind a colliding key (a mispredicted branch each), in a
  word table one in fourteen, which is worth the extra ``ekey`` load. The naive algorithm
  gains nothing from it (its hot items arrive first and take their home slots, so about one
  lookup in twenty-five collides) and loses the inline key, so it keeps pairs.

The sampling hash is ``h(d, t) = mix64(hash(d) ^ mix64(t ^ salt))`` with ``mix64`` the
SplitMix64 finalizer (the same one :func:`windowkit.core.hashing.hash64` uses), so it is
deterministic, seeded and process-independent; an instance samples ``(d, t)`` when
``h(d, t) < tau * 2**64``.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

from windowkit.core.hashing import mix64

# scalar slots of the sliding state (an int64 array so that kernels can update them in place)
N_USED, N_FREE, Q_HEAD, Q_TAIL, CUR_SLOT, HAVE_CUR, N_LIVE, N_NEW = range(8)

# a word-table slot is (key >> 32) << 32 | (entry id + 1); 0 marks an empty slot
_TAG_SHIFT = np.uint64(32)
_ID_MASK = np.uint64(0xFFFFFFFF)
MAX_WORD_ENTRIES = 2**32 - 2
"""Entry ids of a word table must fit the low 32 bits of a word (with the +1)."""


@nb.njit(cache=True)
def hash_int64(values: np.ndarray, seed_mix: np.uint64) -> np.ndarray:  # pragma: no cover
    """``hash64(values, seed)`` for int64 values, in one compiled pass."""
    out = np.empty(values.size, dtype=np.uint64)
    for i in range(values.size):
        out[i] = mix64(np.uint64(values[i]) ^ seed_mix)
    return out


PREFETCH_ROWS = 16
"""How many rows ahead the update kernels prefetch a row's home slot of the table.

Lookups of different rows are independent, so a miss on row ``i``'s slot need not wait for
row ``i - 1``: asking for it this early overlaps the cache misses of many rows. It halves the
time per row when the table is larger than the L2 cache and saves about a nanosecond when it
fits. Every kernel uses the same distance, so the sketches and the exact algorithm get the same
treatment.
"""


@intrinsic
def _prefetch(typingctx, arr, idx):  # pragma: no cover - compiled
    """Hint the CPU to load ``arr[idx]`` into all cache levels (``llvm.prefetch``, no fault)."""
    sig = nb.types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty, _ = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # read (0), high temporal locality (3), data cache (1)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@nb.njit(cache=True, inline="always")
def _prefetch_pair(table, hashes, i):  # pragma: no cover - compiled
    """Prefetch the home pair of row ``i + PREFETCH_ROWS`` of a pair table."""
    j = i + PREFETCH_ROWS
    if j < hashes.size:
        _prefetch(table, np.int64(2 * (hashes[j] & np.uint64((table.size >> 1) - 1))))


@nb.njit(cache=True, inline="always")
def _prefetch_word(words, hashes, i):  # pragma: no cover - compiled
    """Prefetch the home word of row ``i + PREFETCH_ROWS`` of a word table."""
    j = i + PREFETCH_ROWS
    if j < hashes.size:
        _prefetch(words, np.int64(hashes[j] & np.uint64(words.size - 1)))


@nb.njit(cache=True)
def scan_slots(slots, now, lateness):  # pragma: no cover - compiled
    """First row whose slot is over ``lateness`` behind the latest earlier slot and ``now``.

    Returns ``(row, ref, lo, hi)``: the row (``-1`` if none) and the latest slot before it, or
    the latest of ``now`` and all the slots when no row is late (the new current slot); ``lo``
    and ``hi`` are the least and greatest slot when no row is late. Batches usually come in slot
    order, which one branch-free (vectorized) pass recognizes; in that case no row can be late
    but the first, and the bounds are the ends. Otherwise one pass keeps the running maximum:
    both cost less than numpy's running maximum, shift, compare, min and max.
    """
    n = slots.size
    if n == 0:
        return np.int64(-1), now, now, now
    descents = 0
    for i in range(1, n):
        descents += slots[i] < slots[i - 1]
    if descents == 0 and slots[0] >= now - lateness:
        return np.int64(-1), max(now, slots[n - 1]), slots[0], slots[n - 1]
    ref = now
    lo = slots[0]
    hi = slots[0]
    for i in range(n):
        t = slots[i]
        if t < ref - lateness:
            return np.int64(i), ref, lo, hi
        ref = max(ref, t)
        lo = min(lo, t)
        hi = max(hi, t)
    return np.int64(-1), ref, lo, hi


@nb.njit(cache=True)
def sample_values(hashes, slots, salt):  # pragma: no cover - compiled
    """``h(d, t)`` for every row (used by tests and the reference)."""
    out = np.empty(hashes.size, dtype=np.uint64)
    for i in range(hashes.size):
        out[i] = mix64(hashes[i] ^ mix64(np.uint64(slots[i]) ^ salt))
    return out


@nb.njit(cache=True, inline="always")
def _find(table, h):  # pragma: no cover - compiled
    """Probe for ``h``: ``(entry id, position)`` or ``(-1, empty position)``.

    ``table`` interleaves ``[key, entry id + 1]`` pairs (0 = empty) so that a probe touches one
    cache line; most rows of a sketch belong to untracked items, whose probes end on an empty
    pair without reading any entry array.
    """
    mask = (table.size >> 1) - 1
    i = np.int64(h & np.uint64(mask))
    while True:
        e = table[2 * i + 1]
        if e == 0:
            return -1, i
        if table[2 * i] == h:
            return np.int64(e) - 1, i
        i = (i + 1) & mask


@nb.njit(cache=True, inline="always")
def _put(table, pos, h, e):  # pragma: no cover - compiled
    table[2 * pos] = h
    table[2 * pos + 1] = np.uint64(e + 1)


@nb.njit(cache=True)
def _delete_at(table, pos):  # pragma: no cover - compiled
    mask = (table.size >> 1) - 1
    i = pos
    j = pos
    while True:
        j = (j + 1) & mask
        if table[2 * j + 1] == 0:
            break
        k = np.int64(table[2 * j] & np.uint64(mask))
        # the pair at j may move to the hole at i unless its home k lies cyclically in (i, j]
        if i <= j:
            stays = i < k <= j
        else:
            stays = k > i or k <= j
        if stays:
            continue
        table[2 * i] = table[2 * j]
        table[2 * i + 1] = table[2 * j + 1]
        i = j
    table[2 * i] = 0
    table[2 * i + 1] = 0


@nb.njit(cache=True)
def rehash(table, ekey, live):  # pragma: no cover - compiled
    """Insert every live entry id into an empty ``table``."""
    for e in range(live.size):
        if live[e]:
            _, pos = _find(table, ekey[e])
            _put(table, pos, ekey[e], e)


@nb.njit(cache=True, inline="always")
def _append_entry(ekey, ecount, elast, new_rows, e, h, t, i):  # pragma: no cover - compiled
    """Start tracking key ``h`` as entry ``e``, first seen in slot ``t`` at row ``i``."""
    ekey[e] = h
    ecount[e] = 1
    elast[e] = t
    new_rows[e] = i


@nb.njit(cache=True)
def fixed_update(
    hashes, slots, start, table, ekey, ecount, elast, new_rows, n_entries
):  # pragma: no cover - compiled
    """The naive algorithm (every item tracked: tau >= 1) over rows ``start..``.

    Returns ``(next_row, n_entries)``; ``next_row < len(hashes)`` asks the caller to grow.
    """
    limit = min(ekey.size, table.size // 4)
    for i in range(start, hashes.size):
        _prefetch_pair(table, hashes, i)
        h = hashes[i]
        t = slots[i]
        e, pos = _find(table, h)
        if e >= 0:
            if elast[e] < t:
                ecount[e] += 1
                elast[e] = t
            continue
        if n_entries >= limit:
            return i, n_entries
        _append_entry(ekey, ecount, elast, new_rows, n_entries, h, t, i)
        _put(table, pos, h, n_entries)
        n_entries += 1
    return hashes.size, n_entries


@nb.njit(cache=True, inline="always")
def _wfind(words, ekey, h):  # pragma: no cover - compiled
    """Probe a word table for ``h``: ``(entry id, position)`` or ``(-1, empty position)``.

    The 32-bit tag rejects almost every other key without touching ``ekey``; the full key is
    compared only on a tag match, so a tag collision costs a load, never a wrong answer.
    """
    mask = np.uint64(words.size - 1)
    tag = h >> _TAG_SHIFT
    i = h & mask
    while True:
        w = words[i]
        if w == 0:
            return np.int64(-1), i
        if w >> _TAG_SHIFT == tag:
            e = np.int64(w & _ID_MASK) - 1
            if ekey[e] == h:
                return e, i
        i = (i + np.uint64(1)) & mask


@nb.njit(cache=True, inline="always")
def _wput(words, pos, h, e):  # pragma: no cover - compiled
    words[pos] = ((h >> _TAG_SHIFT) << _TAG_SHIFT) | np.uint64(e + 1)


@nb.njit(cache=True)
def word_rehash(words, ekey, n_entries):  # pragma: no cover - compiled
    """Insert entries ``0 .. n_entries - 1`` into an empty word table."""
    for e in range(n_entries):
        _, pos = _wfind(words, ekey, ekey[e])
        _wput(words, pos, ekey[e], e)


@nb.njit(cache=True)
def fixed_sample_update(
    hashes, slots, start, words, ekey, ecount, elast, new_rows, n_entries, thr, salt
):  # pragma: no cover - compiled
    """Algorithm 2 of a sampling instance (``tau < 1``) over rows ``start..``, on a word table.

    Same contract as :func:`fixed_update`: returns ``(next_row, n_entries)``, and
    ``next_row < len(hashes)`` asks the caller to grow.
    """
    limit = min(ekey.size, words.size // 4)
    cur = slots[start] if start < hashes.size else np.int64(0)
    slot_mix = mix64(np.uint64(cur) ^ salt)
    for i in range(start, hashes.size):
        _prefetch_word(words, hashes, i)
        h = hashes[i]
        t = slots[i]
        e, pos = _wfind(words, ekey, h)
        if e >= 0:
            if elast[e] < t:
                ecount[e] += 1
                elast[e] = t
            continue
        if t != cur:  # h(d, t) is only needed for untracked items: mix the slot lazily
            cur = t
            slot_mix = mix64(np.uint64(t) ^ salt)
        if mix64(h ^ slot_mix) >= thr:
            continue
        if n_entries >= limit:
            return i, n_entries
        _append_entry(ekey, ecount, elast, new_rows, n_entries, h, t, i)
        _wput(words, pos, h, n_entries)
        n_entries += 1
    return hashes.size, n_entries


@nb.njit(cache=True)
def sliding_expire(
    limit, sc, table, ekey, ehead, ecount, efree, tslot, tnext, titem
):  # pragma: no cover - compiled
    """Algorithm 6: drop tuples with slot <= ``limit``; drop items left without tuples."""
    qmask = tslot.size - 1
    qhead = sc[Q_HEAD]
    qtail = sc[Q_TAIL]
    while qhead < qtail:
        p = qhead & qmask
        if tslot[p] > limit:
            break
        e = titem[p]
        nxt = tnext[p]
        ehead[e] = nxt
        ecount[e] -= 1
        if nxt == -1:
            _, pos = _find(table, ekey[e])
            _delete_at(table, pos)
            ehead[e] = -2
            efree[sc[N_FREE]] = e
            sc[N_FREE] += 1
            sc[N_LIVE] -= 1
        qhead += 1
    sc[Q_HEAD] = qhead


@nb.njit(cache=True)
def sliding_update(
    hashes, slots, start, window, sc, table, ekey, elast, ehead, etail, ecount, ecum, efree,
    tslot, tbase, tnext, titem, new_ids, new_rows, thr, all_pass, salt,
):  # pragma: no cover - compiled
    """Algorithms 5 and 6 over rows ``start..``; returns the row to resume from.

    Per item: one shared last-seen slot ``elast`` and a list of tuples ``(t', n_{d,t'})``
    linked in slot order through ``tnext`` (sequence numbers into the ring ``tslot``). Rather
    than adding 1 to every tuple of the list on each new slot of ``d`` (a cache-missing walk),
    the item keeps ``ecum`` = distinct slots of ``d`` since it entered the table and each tuple
    keeps ``tbase`` = ``ecum`` when it was opened, so ``n_{d,t'} = ecum - tbase + 1``.
    ``ecount`` is the list length: with ``all_pass`` every ``(d, t)`` opens a tuple and
    ``ecount`` is the item's persistence in the window (the naive sliding algorithm).
    """
    qmask = tslot.size - 1
    elimit = min(ekey.size, table.size // 4)
    slot_mix = np.uint64(0)
    if sc[HAVE_CUR] == 1:
        slot_mix = mix64(np.uint64(sc[CUR_SLOT]) ^ salt)
    for i in range(start, hashes.size):
        _prefetch_pair(table, hashes, i)
        h = hashes[i]
        t = slots[i]
        if sc[HAVE_CUR] == 0 or t != sc[CUR_SLOT]:
            sliding_expire(t - window, sc, table, ekey, ehead, ecount, efree, tslot, tnext, titem)
            sc[CUR_SLOT] = t
            sc[HAVE_CUR] = 1
            slot_mix = mix64(np.uint64(t) ^ salt)
        e, pos = _find(table, h)
        if e >= 0 and elast[e] == t:
            continue  # d already seen in slot t: Algorithm 5 changes nothing
        sampled = all_pass or mix64(h ^ slot_mix) < thr
        if sampled and sc[Q_TAIL] - sc[Q_HEAD] > qmask:
            return i  # ring full
        if e >= 0:
            ecum[e] += 1
            elast[e] = t
            if sampled:
                seq = sc[Q_TAIL]
                p = seq & qmask
                tslot[p] = t
                tbase[p] = ecum[e]
                tnext[p] = -1
                titem[p] = e
                tnext[etail[e] & qmask] = seq
                etail[e] = seq
                ecount[e] += 1
                sc[Q_TAIL] = seq + 1
            continue
        if not sampled:
            continue
        if sc[N_FREE] == 0 and sc[N_USED] >= ekey.size:
            return i
        if sc[N_LIVE] >= elimit or sc[N_NEW] >= new_ids.size:
            return i
        if sc[N_FREE] > 0:
            sc[N_FREE] -= 1
            e = efree[sc[N_FREE]]
        else:
            e = sc[N_USED]
            sc[N_USED] += 1
        seq = sc[Q_TAIL]
        p = seq & qmask
        tslot[p] = t
        tbase[p] = 1
        tnext[p] = -1
        titem[p] = e
        sc[Q_TAIL] = seq + 1
        ekey[e] = h
        elast[e] = t
        ehead[e] = seq
        etail[e] = seq
        ecount[e] = 1
        ecum[e] = 1
        _put(table, pos, h, e)
        sc[N_LIVE] += 1
        new_ids[sc[N_NEW]] = e
        new_rows[sc[N_NEW]] = i
        sc[N_NEW] += 1
    return hashes.size


@nb.njit(cache=True)
def sliding_collect(order, ehead, ecum, tslot, tbase, tnext):  # pragma: no cover - compiled
    """Flatten the tuple lists of the entries in ``order``: lengths, slots, ``n_{d,t'}``."""
    qmask = tslot.size - 1
    lengths = np.zeros(order.size, dtype=np.int64)
    total = 0
    for k in range(order.size):
        q = ehead[order[k]]
        while q != -1:
            lengths[k] += 1
            total += 1
            q = tnext[q & qmask]
    out_slot = np.empty(total, dtype=np.int64)
    out_count = np.empty(total, dtype=np.int64)
    j = 0
    for k in range(order.size):
        q = ehead[order[k]]
        while q != -1:
            p = q & qmask
            out_slot[j] = tslot[p]
            out_count[j] = ecum[order[k]] - tbase[p] + 1
            j += 1
            q = tnext[p]
    return lengths, out_slot, out_count
