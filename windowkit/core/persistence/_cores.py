"""Array-backed state of one sketch instance (or of the exact algorithm).

``FixedCore`` holds the tuples ``(d, n_d, t_d)`` of Algorithms 1-3; ``SlidingCore`` holds, per
item, one shared last-seen slot and a slot-ordered list of ``(t', n_{d,t'})`` (Algorithms 4-7,
laid out as the paper's implementation section describes). Both know how to grow, how to
export a *canonical* form (entries sorted by item hash, so equal logical states give equal
bytes whatever the batch split or the allocation history) and how to rebuild from it.
"""

from __future__ import annotations

import numpy as np

from windowkit.core.persistence import _kernels as K


def _grow(arr: np.ndarray, size: int, fill: int | None = None) -> np.ndarray:
    out = np.empty(size, dtype=arr.dtype) if fill is None else np.full(size, fill, arr.dtype)
    out[: arr.size] = arr
    return out


def _table_for(n_live: int) -> np.ndarray:
    """An empty table with at least ``4 * n_live + 4`` uint64 elements (see ``_kernels``)."""
    size = 16
    while size < 2 * max(n_live, 1) + 2:
        size *= 2
    return np.zeros(2 * size, dtype=np.uint64)


class FixedCore:
    """One instance of the fixed-window sketch; ``all_pass`` makes it the naive algorithm.

    A sampling instance keys its entries with a word table, one that tracks every item with a
    pair table (see ``_kernels``); both take the same bytes and export the same canonical form.
    """

    def __init__(self, thr: int, all_pass: bool, salt: int, kind: str | None) -> None:
        self.thr = np.uint64(thr)
        self.all_pass = all_pass
        self.salt = np.uint64(salt)
        self.n = 0
        self.table = _table_for(0)
        self.ekey = np.zeros(8, dtype=np.uint64)
        self.ecount = np.zeros(8, dtype=np.int64)
        self.elast = np.zeros(8, dtype=np.int64)
        self.new_rows = np.zeros(8, dtype=np.int64)
        self.values = np.empty(8, dtype=np.int64 if kind != "str" else object)

    def update(self, hashes: np.ndarray, slots: np.ndarray, items: np.ndarray) -> None:
        start = 0
        while True:
            before = self.n
            start, self.n = self._run(hashes, slots, start)
            if self.n > before:
                self.values[before : self.n] = items[self.new_rows[before : self.n]]
            if start >= hashes.size:
                return
            self._grow()

    def _run(self, hashes: np.ndarray, slots: np.ndarray, start: int) -> tuple[int, int]:
        if self.all_pass:
            return K.fixed_update(
                hashes, slots, start, self.table, self.ekey, self.ecount, self.elast,
                self.new_rows, self.n,
            )
        return K.fixed_sample_update(
            hashes, slots, start, self.table, self.ekey, self.ecount, self.elast,
            self.new_rows, self.n, self.thr, self.salt,
        )

    def _rehash(self) -> None:
        """Key entries ``0 .. n-1`` into ``self.table`` (freshly zeroed)."""
        if self.all_pass:
            live = np.zeros(self.ekey.size, dtype=np.bool_)
            live[: self.n] = True
            K.rehash(self.table, self.ekey, live)
        else:
            K.word_rehash(self.table, self.ekey, self.n)

    def _grow(self) -> None:
        if self.n >= self.ekey.size:
            size = 2 * self.ekey.size
            if not self.all_pass and size > K.MAX_WORD_ENTRIES:
                msg = f"a sketch instance cannot track more than {K.MAX_WORD_ENTRIES} items"
                raise OverflowError(msg)
            self.ekey = _grow(self.ekey, size)
            self.ecount = _grow(self.ecount, size)
            self.elast = _grow(self.elast, size)
            self.new_rows = _grow(self.new_rows, size)
            self.values = _grow(self.values, size)
        if self.n >= self.table.size // 4:
            self.table = np.zeros(2 * self.table.size, dtype=np.uint64)
            self._rehash()

    # -- canonical form -------------------------------------------------------------------
    def canonical(self) -> dict[str, np.ndarray]:
        order = np.argsort(self.ekey[: self.n], kind="stable")
        return {
            "key": self.ekey[: self.n][order],
            "count": self.ecount[: self.n][order],
            "last": self.elast[: self.n][order],
            "value": self.values[: self.n][order],
        }

    def load(self, arrays: dict[str, np.ndarray]) -> None:
        n = int(arrays["key"].size)
        size = max(8, 1 << max(n - 1, 1).bit_length())
        self.n = n
        self.ekey = _grow(arrays["key"].astype(np.uint64), size, 0)
        self.ecount = _grow(arrays["count"].astype(np.int64), size, 0)
        self.elast = _grow(arrays["last"].astype(np.int64), size, 0)
        self.new_rows = np.zeros(size, dtype=np.int64)
        vals = arrays["value"]
        self.values = np.empty(size, dtype=object if vals.dtype == object else np.int64)
        self.values[:n] = vals
        self.table = _table_for(n)
        self._rehash()

    def counts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Keys, values and ``n_d`` of every tracked item."""
        return self.ekey[: self.n], self.values[: self.n], self.ecount[: self.n]

    @property
    def tuples(self) -> int:
        return self.n

    def memory_bytes(self) -> int:
        arrays = (self.table, self.ekey, self.ecount, self.elast, self.new_rows, self.values)
        return sum(a.nbytes for a in arrays) + _object_bytes(self.values[: self.n])


class SlidingCore:
    """One instance of the sliding-window sketch; ``all_pass`` makes it the naive algorithm."""

    def __init__(self, window: int, thr: int, all_pass: bool, salt: int, kind: str | None) -> None:
        self.window = window
        self.thr = np.uint64(thr)
        self.all_pass = all_pass
        self.salt = np.uint64(salt)
        self.sc = np.zeros(8, dtype=np.int64)
        self.table = _table_for(0)
        self._alloc_entries(8, kind)
        self._alloc_ring(16)

    def _alloc_entries(self, size: int, kind: str | None) -> None:
        self.ekey = np.zeros(size, dtype=np.uint64)
        self.elast = np.zeros(size, dtype=np.int64)
        self.ehead = np.full(size, -2, dtype=np.int64)
        self.etail = np.full(size, -1, dtype=np.int64)
        self.ecount = np.zeros(size, dtype=np.int64)
        self.ecum = np.zeros(size, dtype=np.int64)
        self.efree = np.zeros(size, dtype=np.int32)
        self.new_ids = np.zeros(size, dtype=np.int32)
        self.new_rows = np.zeros(size, dtype=np.int64)
        self.values = np.empty(size, dtype=object if kind == "str" else np.int64)

    def _alloc_ring(self, size: int) -> None:
        self.tslot = np.zeros(size, dtype=np.int64)
        self.tbase = np.zeros(size, dtype=np.int64)
        self.tnext = np.full(size, -1, dtype=np.int64)
        self.titem = np.zeros(size, dtype=np.int32)

    def _args(self) -> tuple:
        return (
            self.sc, self.table, self.ekey, self.elast, self.ehead, self.etail, self.ecount,
            self.ecum, self.efree, self.tslot, self.tbase, self.tnext, self.titem, self.new_ids,
            self.new_rows, self.thr, self.all_pass, self.salt,
        )

    def update(self, hashes: np.ndarray, slots: np.ndarray, items: np.ndarray) -> None:
        start = 0
        while True:
            self.sc[K.N_NEW] = 0
            start = K.sliding_update(hashes, slots, start, self.window, *self._args())
            k = int(self.sc[K.N_NEW])
            if k:
                self.values[self.new_ids[:k]] = items[self.new_rows[:k]]
            if start >= hashes.size:
                return
            self._grow()

    def expire(self, limit: int) -> None:
        K.sliding_expire(
            np.int64(limit), self.sc, self.table, self.ekey, self.ehead, self.ecount,
            self.efree, self.tslot, self.tnext, self.titem,
        )

    def _grow(self) -> None:
        sc = self.sc
        if sc[K.Q_TAIL] - sc[K.Q_HEAD] >= self.tslot.size:
            old = (self.tslot, self.tbase, self.tnext, self.titem)
            seqs = np.arange(sc[K.Q_HEAD], sc[K.Q_TAIL], dtype=np.int64)
            src = seqs & (self.tslot.size - 1)
            self._alloc_ring(2 * self.tslot.size)
            dst = seqs & (self.tslot.size - 1)
            fresh = (self.tslot, self.tbase, self.tnext, self.titem)
            for new, prev in zip(fresh, old, strict=True):
                new[dst] = prev[src]
        if sc[K.N_FREE] == 0 and sc[K.N_USED] >= self.ekey.size:
            size = 2 * self.ekey.size
            self.ekey = _grow(self.ekey, size, 0)
            self.elast = _grow(self.elast, size, 0)
            self.ehead = _grow(self.ehead, size, -2)
            self.etail = _grow(self.etail, size, -1)
            self.ecount = _grow(self.ecount, size, 0)
            self.ecum = _grow(self.ecum, size, 0)
            self.efree = _grow(self.efree, size, 0)
            self.new_ids = _grow(self.new_ids, size, 0)
            self.new_rows = _grow(self.new_rows, size, 0)
            self.values = _grow(self.values, size)
        if sc[K.N_LIVE] >= self.table.size // 4:
            self.table = np.zeros(2 * self.table.size, dtype=np.uint64)
            K.rehash(self.table, self.ekey, self.ehead >= 0)

    def live_ids(self) -> np.ndarray:
        return np.flatnonzero(self.ehead[: self.sc[K.N_USED]] >= 0)

    def heads(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Keys, values, earliest tuple's ``n_{d,t'}`` and list length of every live item."""
        ids = self.live_ids()
        head = self.ehead[ids] & (self.tslot.size - 1)
        n_head = self.ecum[ids] - self.tbase[head] + 1
        return self.ekey[ids], self.values[ids], n_head, self.ecount[ids]

    @property
    def tuples(self) -> int:
        return int(self.sc[K.Q_TAIL] - self.sc[K.Q_HEAD])

    @property
    def cur_slot(self) -> int | None:
        return int(self.sc[K.CUR_SLOT]) if self.sc[K.HAVE_CUR] else None

    # -- canonical form -------------------------------------------------------------------
    def canonical(self) -> dict[str, np.ndarray]:
        ids = self.live_ids()
        ids = ids[np.argsort(self.ekey[ids], kind="stable")]
        lengths, tslot, tcount = K.sliding_collect(
            ids.astype(np.int64), self.ehead, self.ecum, self.tslot, self.tbase, self.tnext
        )
        return {
            "key": self.ekey[ids], "last": self.elast[ids], "value": self.values[ids],
            "length": lengths, "tslot": tslot, "tcount": tcount,
        }

    def load(self, arrays: dict[str, np.ndarray]) -> None:
        keys = arrays["key"].astype(np.uint64)
        lengths = arrays["length"].astype(np.int64)
        tslot = arrays["tslot"].astype(np.int64)
        n, total = int(keys.size), int(tslot.size)
        if lengths.sum() != total or (lengths < 1).any():
            msg = "tuple lists do not match their items"
            raise ValueError(msg)
        vals = arrays["value"]
        self._alloc_entries(max(8, 1 << max(n - 1, 1).bit_length()), _kind_of(vals))
        ring = max(16, 1 << max(total - 1, 1).bit_length())
        self._alloc_ring(ring)
        self.ekey[:n] = keys
        self.elast[:n] = arrays["last"]
        self.values[:n] = vals
        self.ecount[:n] = lengths
        owner = np.repeat(np.arange(n, dtype=np.int32), lengths)
        order = np.lexsort((owner, tslot))  # creation order: by slot
        seq_of = np.empty(total, dtype=np.int64)
        seq_of[order] = np.arange(total, dtype=np.int64)
        first = np.cumsum(lengths) - lengths
        tcount = arrays["tcount"].astype(np.int64)
        self.ecum[:n] = tcount[first]  # the earliest tuple has the largest n_{d,t'}
        self.tslot[seq_of] = tslot
        self.tbase[seq_of] = np.repeat(self.ecum[:n], lengths) - tcount + 1
        self.titem[seq_of] = owner
        last = first + lengths - 1
        has_next = np.ones(total, dtype=bool)
        has_next[last] = False
        nxt = np.full(total, -1, dtype=np.int64)
        nxt[has_next] = seq_of[np.flatnonzero(has_next) + 1]
        self.tnext[seq_of] = nxt
        self.ehead[:n] = seq_of[first]
        self.etail[:n] = seq_of[last]
        self.table = _table_for(n)
        K.rehash(self.table, self.ekey, self.ehead >= 0)
        self.sc[:] = 0
        self.sc[K.N_USED] = n
        self.sc[K.N_LIVE] = n
        self.sc[K.Q_TAIL] = total

    def memory_bytes(self) -> int:
        arrays = (
            self.sc, self.table, self.ekey, self.elast, self.ehead, self.etail, self.ecount,
            self.ecum, self.efree, self.new_ids, self.new_rows, self.values, self.tslot,
            self.tbase, self.tnext, self.titem,
        )
        return sum(a.nbytes for a in arrays) + _object_bytes(self.values[self.live_ids()])


def _kind_of(values: np.ndarray) -> str:
    return "str" if values.dtype == object else "int"


def _object_bytes(values: np.ndarray) -> int:
    if values.dtype != object or not values.size:
        return 0
    return int(sum(len(v) + 49 for v in values))
