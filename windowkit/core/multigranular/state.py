"""Per-key chain state of many keys: slot allocation, batch folding, stepping, bytes."""

from __future__ import annotations

from typing import Any

import numpy as np

from windowkit.core.multigranular.cells import (
    BASIC_FIELDS,
    N_FIELDS,
    N,
    empty_cells,
    merge_cells,
    rows_to_cells,
)
from windowkit.core.multigranular.chain import NONE, ChainLayout, run_chain
from windowkit.core.multigranular.spec import MultiGranularSpec
from windowkit.core.serialization import StateFormatError

#: Frontier granule meaning "the input has ended".
END_OF_INPUT = 2**62
#: Granule meaning "never".
_NEVER = np.iinfo(np.int64).max
#: The arrays holding one entry per key slot.
_PER_KEY = ("ring", "ring_end", "head", "size", "last_g", "done_g", "open_g", "open_cells")


class Reports:
    """Report rows of one call: key slots, levels, granules, cells and extras."""

    def __init__(self, ints: np.ndarray, floats: np.ndarray, extras: np.ndarray) -> None:
        self.slot = ints[:, 0]
        self.level = ints[:, 1]
        self.granule = ints[:, 2]
        self.cells = floats
        self.extras = extras

    def __len__(self) -> int:
        return len(self.slot)


class ChainState:
    """The stairwise chains of all keys as dense arrays indexed by a key slot.

    Examples
    --------
    >>> spec = MultiGranularSpec.from_levels([(2, 1), (4, 2)])
    >>> st = ChainState(spec, n_fields=1)
    >>> slots = st.slots(np.array(["a"], dtype=object))[np.zeros(3, dtype=np.int64)]
    >>> rep = st.fold_rows(slots, np.array([1, 2, 3]), None, frontier=3)
    >>> list(zip(rep.level.tolist(), rep.granule.tolist(), rep.cells[:, 0].tolist()))
    [(0, 1, 1.0), (0, 2, 2.0), (1, 2, 2.0), (0, 3, 2.0)]
    """

    def __init__(self, spec: MultiGranularSpec, n_fields: int,
                 weights: np.ndarray | None = None, full: bool = True) -> None:
        if n_fields not in (1, BASIC_FIELDS, N_FIELDS) or (full and n_fields == BASIC_FIELDS):
            msg = (f"`n_fields` must be 1, {BASIC_FIELDS} (without `full`) or {N_FIELDS}; "
                   f"got {n_fields} with full={full}")
            raise ValueError(msg)
        self.spec = spec
        self.layout = ChainLayout(spec)
        self.n_fields = n_fields
        self.full = full  # reports need the centred moments (variance, regression)
        self.weights = (np.ones(spec.n_levels) if weights is None
                        else np.asarray(weights, dtype=np.float64))
        self.keys: list = []
        self.index: dict = {}
        self._key_values: np.ndarray | None = None
        self.frontier: int | None = None  # rows at or before this instant have all arrived
        self._alloc(0)

    # ------------------------------------------------------------------ storage
    def _alloc(self, capacity: int) -> None:
        lay, nl = self.layout, self.spec.n_levels
        self.ring = np.zeros((capacity, lay.total, self.n_fields))
        self.ring_end = np.zeros((capacity, lay.total), dtype=np.int64)
        self.head = np.zeros((capacity, nl), dtype=np.int64)
        self.size = np.zeros((capacity, nl), dtype=np.int64)
        self.last_g = np.full(capacity, NONE, dtype=np.int64)
        self.done_g = np.full(capacity, NONE, dtype=np.int64)
        self.open_g = np.full(capacity, NONE, dtype=np.int64)
        self.open_cells = empty_cells(capacity, self.n_fields)

    def _grow(self, need: int) -> None:
        old = {n: getattr(self, n) for n in _PER_KEY}
        used = len(self.keys)
        self._alloc(max(need, 2 * len(old["last_g"]), 16))
        for name, arr in old.items():
            getattr(self, name)[:used] = arr[:used]

    def slots(self, unique_keys: np.ndarray) -> np.ndarray:
        """Slots of ``unique_keys`` (new keys get new slots)."""
        index = self.index
        new = [k for k in unique_keys.tolist() if k not in index]
        if new:
            if len(self.keys) + len(new) > len(self.last_g):
                self._grow(len(self.keys) + len(new))
            for k in new:
                index[k] = len(self.keys)
                self.keys.append(k)
        return np.fromiter((index[k] for k in unique_keys.tolist()), np.int64, len(unique_keys))

    def key_values(self) -> np.ndarray:
        """The keys by slot as one array: int64 when they are all integers (a column of
        numbers for the reports, not one Python object per row), else objects.

        Examples
        --------
        >>> from windowkit.core.multigranular.spec import MultiGranularSpec
        >>> st = ChainState(MultiGranularSpec.from_levels([(2, 1)]), 1)
        >>> st.slots(np.array([7, 3])).tolist(), st.key_values().dtype.name
        ([0, 1], 'int64')
        """
        values = self._key_values
        if values is None or len(values) != len(self.keys):
            values = np.asarray(self.keys, dtype=object)
            if len(values) and all(isinstance(k, (int, np.integer)) and not isinstance(k, bool)
                                   for k in self.keys):
                try:
                    values = values.astype(np.int64)
                except OverflowError:  # integers beyond int64 stay Python integers
                    pass
            self._key_values = values
        return values

    # ------------------------------------------------------------------ stepping
    def granules(self, time: np.ndarray) -> np.ndarray:
        """Finest granule of each instant: ``ceil((t - t0) / b_0)``."""
        return -((self.spec.origin - time) // self.spec.finest_slide)

    def _frontier_granule(self) -> int:
        if self.frontier is None:
            return NONE + 1
        if self.frontier >= END_OF_INPUT:
            return END_OF_INPUT
        return (self.frontier - self.spec.origin) // self.spec.finest_slide

    def fold_rows(self, slot: np.ndarray, time: np.ndarray, value: np.ndarray | None,
                  frontier: int) -> Reports:
        """Fold time-ordered rows in; then every report due by ``frontier`` (µs)."""
        value = np.zeros(len(time)) if value is None else value
        c_slot, c_g, cells = rows_to_cells(
            slot, self.granules(time), time, value, self.spec.origin, self.spec.finest_slide,
            self.open_g, self.open_cells, NONE, self.n_fields)
        return self._run(c_slot, c_g, cells, frontier)

    def fold_cells(self, slot: np.ndarray, time: np.ndarray, cells: np.ndarray,
                   frontier: int) -> Reports:
        """Fold time-ordered pre-aggregated cells in (one per row, times relative to the
        granule's end instant); then every report due by ``frontier`` (µs)."""
        c_slot, c_g, merged = merge_cells(slot, self.granules(time), cells, self.open_g,
                                          self.open_cells, NONE)
        return self._run(c_slot, c_g, merged, frontier)

    def advance(self, frontier: int) -> Reports:
        """Every report due once all rows up to ``frontier`` (µs) have arrived."""
        empty = np.zeros(0, dtype=np.int64)
        return self._run(empty, empty, empty_cells(0, self.n_fields), frontier)

    def _run(self, c_slot: np.ndarray, c_g: np.ndarray, cells: np.ndarray,
             frontier: int) -> Reports:
        if self.frontier is None or frontier > self.frontier:
            self.frontier = frontier
        used = len(self.keys)
        held = np.flatnonzero(self.open_g[:used] != NONE)
        if len(held):  # open cells of keys without rows here may be complete now
            c_slot = np.concatenate([c_slot, held.astype(np.int64)])
            c_g = np.concatenate([c_g, self.open_g[held]])
            cells = np.concatenate([cells, self.open_cells[held]])
            self.open_g[held] = NONE
        if len(c_slot) > 1 and np.any(c_slot[1:] < c_slot[:-1]):
            order = np.argsort(c_slot, kind="stable")
            c_slot, c_g, cells = c_slot[order], c_g[order], cells[order]
        lay = self.layout
        out_i, out_f, out_x, m, error = run_chain(
            c_slot, c_g, np.ascontiguousarray(cells), self._frontier_granule(), self.ring,
            self.ring_end, self.head, self.size, self.last_g, self.done_g, self.open_g,
            self.open_cells, lay.n, lay.r, lay.s, lay.off, lay.cap, self.weights,
            self.spec.finest_slide, True, self.full)
        if error:
            msg = ("multi-granular chain overflow or time going backwards; this is a bug "
                   f"(code {error})")
            raise RuntimeError(msg)
        return Reports(out_i[:m], out_f[:m], out_x[:m])

    def next_deadline(self) -> int | None:
        """Smallest watermark (µs) at which :meth:`advance` reports something, if any."""
        if not self.keys:
            return None
        g = int(self._due_granules().min())
        if g == _NEVER:
            return None
        return self.spec.origin + g * self.spec.finest_slide

    def _due_granules(self) -> np.ndarray:
        """Per key, the first granule at which it has a report due or an open cell to
        complete (``_NEVER``: none)."""
        used = len(self.keys)
        lay = self.layout
        best = np.where(self.open_g[:used] != NONE, self.open_g[:used], _NEVER)
        live = self.last_g[:used] != NONE
        done = self.done_g[:used]
        for k in range(self.spec.n_levels):
            nm = (done // lay.r[k] + 1) * lay.r[k]
            due = live & ((self.size[:used, k] > 0) | (nm < self.last_g[:used] + lay.n[k]))
            best = np.where(due & (nm < best), nm, best)
        return best

    # ------------------------------------------------------------------ idle keys
    def idle(self) -> np.ndarray:
        """Per key (by slot): whether its chain holds no cell and owes no report.

        Such a key is as if never seen: its next row would start a chain that reports
        exactly what its old one would (a report needs a row in its scope, and every level's
        scope has moved past the key's last row), so it can be forgotten.

        Examples
        --------
        >>> from windowkit.core.multigranular.spec import MultiGranularSpec
        >>> st = ChainState(MultiGranularSpec.from_levels([(2, 1), (4, 2)]), n_fields=1)
        >>> slots = st.slots(np.array(["a", "b"], dtype=object))
        >>> _ = st.fold_rows(slots, np.array([5, 8]), None, frontier=8)
        >>> st.idle().tolist()
        [False, False]
        >>> st.advance(10).slot.tolist(), st.idle().tolist()  # a's last report was at 8
        ([1, 1], [True, False])
        """
        used = len(self.keys)
        return (self._due_granules() == _NEVER) & (self.size[:used].sum(axis=1) == 0)

    def keep(self, slots: np.ndarray) -> None:
        """Hold only the keys at ``slots`` (increasing), numbered ``0, 1, ...`` in that order.

        Examples
        --------
        >>> from windowkit.core.multigranular.spec import MultiGranularSpec
        >>> st = ChainState(MultiGranularSpec.from_levels([(2, 1)]), n_fields=1)
        >>> _ = st.slots(np.array(["a", "b", "c"], dtype=object))
        >>> st.keep(np.array([0, 2]))
        >>> st.keys
        ['a', 'c']
        >>> st.slots(np.array(["c", "d"], dtype=object)).tolist()
        [1, 2]
        """
        self.keys = [self.keys[s] for s in slots.tolist()]
        self.index = {k: i for i, k in enumerate(self.keys)}
        self._key_values = None
        for name in _PER_KEY:
            setattr(self, name, getattr(self, name)[slots])

    # ------------------------------------------------------------------ bytes
    def arrays(self, slots: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The state as compact arrays: only stored cells, each level's queue in order; of
        the keys at ``slots`` (increasing; default all), in that order."""
        if slots is None:
            slots = np.arange(len(self.keys))
        lay = self.layout
        out: dict[str, Any] = {
            "last_g": self.last_g[slots], "done_g": self.done_g[slots],
            "open_g": self.open_g[slots], "open_cells": self.open_cells[slots],
            "size": self.size[slots],
        }
        for k in range(self.spec.n_levels):
            sizes = self.size[slots, k]
            rep = np.repeat(slots, sizes)
            q = np.arange(len(rep)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
            pos = lay.off[k] + (self.head[rep, k] + q) % lay.cap[k]
            out[f"cells{k}"] = self.ring[rep, pos]
            out[f"ends{k}"] = self.ring_end[rep, pos]
        return out

    def load(self, keys: list, arrays: dict[str, np.ndarray], frontier: int | None) -> None:
        """Restore what :meth:`arrays` wrote (raises StateFormatError on inconsistency)."""
        used = len(keys)
        lay, nl, nf = self.layout, self.spec.n_levels, self.n_fields
        size = arrays["size"].astype(np.int64)
        if size.shape != (used, nl) or (size < 0).any() or (size > lay.cap).any():
            msg = "multi-granular state holds queue sizes that do not fit its levels"
            raise StateFormatError(msg)
        self._alloc(used)
        self.keys = list(keys)
        self._key_values = None
        self.index = {k: i for i, k in enumerate(self.keys)}
        if len(self.index) != used:
            msg = "multi-granular state holds duplicate keys"
            raise StateFormatError(msg)
        for name in ("last_g", "done_g", "open_g"):
            arr = arrays[name].astype(np.int64)
            if arr.shape != (used,):
                msg = f"multi-granular state array {name!r} has shape {arr.shape}"
                raise StateFormatError(msg)
            getattr(self, name)[:] = arr
        open_cells = _fields(arrays["open_cells"].astype(np.float64), nf)
        if open_cells.shape != (used, nf):
            msg = f"multi-granular state array 'open_cells' has shape {open_cells.shape}"
            raise StateFormatError(msg)
        self.open_cells[:] = open_cells
        self.size[:] = size
        for k in range(nl):
            cells = _fields(arrays[f"cells{k}"].astype(np.float64), nf)
            ends = arrays[f"ends{k}"].astype(np.int64)
            total = int(size[:, k].sum())
            if cells.shape != (total, nf) or ends.shape != (total,):
                msg = f"multi-granular state level {k} holds {cells.shape} cells, not {total}"
                raise StateFormatError(msg)
            rep = np.repeat(np.arange(used), size[:, k])
            q = np.arange(total) - np.repeat(np.cumsum(size[:, k]) - size[:, k], size[:, k])
            self.ring[rep, lay.off[k] + q] = cells
            self.ring_end[rep, lay.off[k] + q] = ends
        self.frontier = frontier
        self._check_loaded(arrays)

    def _check_loaded(self, arrays: dict[str, np.ndarray]) -> None:
        """Refuse a loaded state that breaks what the chain's loop relies on to end.

        Every state the chain reaches keeps, per key with ``D = done_g`` (the last instant
        stepped) and ``F`` the frontier's granule: ``last_g <= D <= F`` once the key holds a
        cell (and no cell before); the open cell, if any, at ``F + 1``; each level ``k``'s
        queue strictly increasing, on multiples of ``s_k``, within
        ``(G_k - n_k, D - n_(k-1) + s_k)`` with ``G_k`` the last multiple of ``r_k`` up to
        ``D`` (a cell there at level ``k``'s slide at ``G_k`` ends after ``G_k - n_k``, one
        come since did so at every finer level, whose ranges are shorter; cells enter level
        ``k`` ending at most ``n_(k-1)`` before ``D``, rounded up to ``s_k``); and no queue
        ends after what the
        levels below it will shift into it. Those bound every queue by its capacity and the
        steps a key takes to its frontier by the levels' ranges (a cell ending far after
        ``D`` would make every granule up to the end of input a step). Counts are finite and
        non-negative.
        """
        used = len(self.keys)
        lay, nl = self.layout, self.spec.n_levels
        last, done, open_g, size = self.last_g[:used], self.done_g[:used], self.open_g[:used], \
            self.size[:used]
        front = self._frontier_granule()
        held = last != NONE
        bad = []
        if (size[~held] != 0).any():
            bad.append("cells of a key that has none")
        # real granules are far from the sentinels and from int64's ends (no overflow below)
        if held.any() and not (_sane(last[held]) & _sane(done[held])).all():
            bad.append("granules out of range")
        elif ((held & (done < last)) | ((done != NONE) & (done > front))).any():
            bad.append("a key stepped before its last cell or beyond the frontier")
        if ((open_g != NONE) & (open_g != front + 1)).any():
            bad.append("an open cell that is not the frontier's next granule")
        if not _counts_ok(self.open_cells[:used][open_g != NONE]):
            bad.append("negative or non-finite counts")
        below = np.full(used, np.iinfo(np.int64).max)  # smallest end of a finer level
        for k in range(nl):
            if bad:
                break
            n_below = int(lay.n[k - 1]) if k else 0
            sk = int(lay.s[k])
            counts = size[:, k]
            ends = np.asarray(arrays[f"ends{k}"], dtype=np.int64)
            cells = _fields(np.asarray(arrays[f"cells{k}"], dtype=np.float64), self.n_fields)
            same_key = np.repeat(np.arange(used), counts)
            d = done[same_key]
            first = np.cumsum(counts) - counts
            if ((ends % sk != 0) | (ends <= d // lay.r[k] * lay.r[k] - lay.n[k])
                    | (ends >= d - n_below + sk)).any():
                bad.append(f"level {k} cells outside the level's range")
            elif (np.diff(ends)[same_key[1:] == same_key[:-1]] <= 0).any():
                bad.append(f"level {k} cells out of order")
            elif not _counts_ok(cells):
                bad.append("negative or non-finite counts")
            has = counts > 0
            tail = ends[first[has] + counts[has] - 1]
            limit = below[has]
            finer = limit != np.iinfo(np.int64).max
            if (tail[finer] > -((-limit[finer]) // sk) * sk).any():
                bad.append(f"level {k} cells after those of the levels below it")
            below[has] = np.minimum(below[has], ends[first[has]])
        if bad:
            msg = f"multi-granular state is inconsistent: {bad[0]}"
            raise StateFormatError(msg)


def _sane(g: np.ndarray) -> np.ndarray:
    return (g > -END_OF_INPUT) & (g <= END_OF_INPUT)


def _counts_ok(cells: np.ndarray) -> bool:
    count = cells[:, N]
    return bool(np.isfinite(count).all() and (count >= 0).all())


def _fields(cells: np.ndarray, n_fields: int) -> np.ndarray:
    """Stored cells with the state's fields: full cells written for reports that read only the
    basic fields (before basic cells existed) keep their first four, which are exact."""
    if n_fields == BASIC_FIELDS and cells.ndim == 2 and cells.shape[1] == N_FIELDS:
        return cells[:, :BASIC_FIELDS]
    return cells
