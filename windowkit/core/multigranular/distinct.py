"""Distinct counts per level (beyond the paper): HyperLogLog sketches along the stairwise chain.

Each key keeps one Apache DataSketches HLL sketch per finest granule that holds a row (built
here from the rows' items, or handed over pre-built, e.g. by Spark's ``hll_sketch_agg``, which
writes the same bytes). The sketches follow the chain's structure: once a granule has left
level ``k - 1``'s range it is merged into level ``k``'s cell of ``s_k`` granules (the chain's
cells, :class:`~windowkit.core.multigranular.chain.ChainLayout`), so a report of level ``k`` at
``G`` unions level 0's granules in ``(G - n_0, G]`` and then, for each ``j <= k``, the cells
covering the disjoint interval ``(G - n_j, G - n_(j-1)]``: one union per report instant, each
cell merged once per level, never a sketch per row. The cells are built lazily, when a report
of the key needs them, and a key's sketches are dropped once its chain holds nothing.

The estimate is rounded to an integer, like Spark's ``hll_sketch_estimate``. Its relative
standard error is about ``1.04 / sqrt(2 ** precision)`` (1.6% at the default precision 12);
while a union holds few distinct items (DataSketches' list and set modes, up to roughly
``2 ** precision / 16`` items) the sketch keeps the items' 26-bit hashes themselves, so the
count is exact unless two items share a hash. Items are hashed as strings (null and empty
strings are not counted: DataSketches ignores them).

The estimate depends only on the union's registers (or hashes), never on the order in which
rows or sketches arrived: DataSketches' HIP estimator, which it uses for a sketch fed in
order, would make it depend on that order (the JVM's partial aggregates, micro-batches). So
the final union is passed once more through a union with itself, which marks it out of order
and makes DataSketches use its composite estimator, a function of the registers alone.
"""

from __future__ import annotations

import math

import datasketches as ds
import numpy as np
import pandas as pd

from windowkit.core.multigranular.chain import ChainLayout
from windowkit.core.multigranular.spec import MultiGranularSpec
from windowkit.core.serialization import StateFormatError
from windowkit.core.validation import check_int

#: Default ``lgConfigK``: 4096 registers, ~1.6% relative standard error (Spark's default too).
DEFAULT_PRECISION = 12
#: The ``lgConfigK`` range DataSketches (and Spark's ``hll_sketch_agg``) accept.
PRECISION_RANGE = (4, 21)
_HLL_TYPE = ds.tgt_hll_type.HLL_8  # the type Spark's hll_sketch_agg writes


def check_precision(precision: object) -> int:
    """Validate ``distinct_precision`` (``lgConfigK``, 4..21).

    Examples
    --------
    >>> check_precision(12)
    12
    >>> check_precision(30)
    Traceback (most recent call last):
    ...
    ValueError: `distinct_precision` must be an integer in [4, 21]; got 30
    """
    return check_int("distinct_precision", precision, *PRECISION_RANGE)


def relative_error(precision: int) -> float:
    """The HLL estimate's relative standard error ``1.04 / sqrt(2 ** precision)``.

    Examples
    --------
    >>> round(relative_error(12), 4)
    0.0163
    """
    return 1.04 / math.sqrt(2.0**precision)


def canonical_estimate(union: ds.hll_union) -> float:
    """The estimate of ``union`` as a function of its registers alone (see module docstring).

    Examples
    --------
    >>> u = ds.hll_union(12)
    >>> for x in ("a", "b", "a"):
    ...     u.update(x)
    >>> round(canonical_estimate(u))
    2
    """
    result = union.get_result(_HLL_TYPE)
    again = ds.hll_union(union.lg_config_k)
    again.update(result)
    again.update(result)
    return again.get_estimate()


class DistinctSketches:
    """Per key slot, the HLL sketches of a multi-granular window, stored along the chain.

    ``store[slot][k]`` maps a cell's last finest granule to its sketch (level 0: single
    granules), in granule order.

    Examples
    --------
    Levels ``<2,1>, <4,2>`` with one time unit per granule; key slot 0 sees items a, b at
    granule 1 and a, c at granule 3. Level 1's report at ``G = 4`` covers granules 1..4:

    >>> spec = MultiGranularSpec.from_levels([(2, 1), (4, 2)])
    >>> sk = DistinctSketches(spec, precision=12)
    >>> sk.add_items(np.array([0, 0, 0, 0]), np.array([1, 1, 3, 3]),
    ...              np.array(["a", "b", "a", "c"], dtype=object))
    >>> sk.estimates(np.array([0, 0]), np.array([0, 1]), np.array([4, 4])).tolist()
    [2, 3]
    """

    def __init__(self, spec: MultiGranularSpec, precision: int = DEFAULT_PRECISION) -> None:
        self.spec = spec
        self.precision = check_precision(precision)
        lay = ChainLayout(spec)
        self.n = lay.n.tolist()
        self.s = lay.s.tolist()
        self.store: list[list[dict[int, ds.hll_sketch]] | None] = []
        self.live: set[int] = set()

    # ------------------------------------------------------------------ input
    def _levels(self, slot: int) -> list[dict[int, ds.hll_sketch]]:
        if slot >= len(self.store):
            self.store.extend([None] * (slot + 1 - len(self.store)))
        levels = self.store[slot]
        if levels is None:
            levels = [{} for _ in self.n]
            self.store[slot] = levels
            self.live.add(slot)
        return levels

    def _merge(self, a: ds.hll_sketch, b: ds.hll_sketch) -> ds.hll_sketch:
        union = ds.hll_union(self.precision)
        union.update(a)
        union.update(b)
        return union.get_result(_HLL_TYPE)

    def add_items(self, slot: np.ndarray, granule: np.ndarray, items: np.ndarray) -> None:
        """Add rows' items (time order) to their key's granule sketches; nulls are skipped."""
        frame = pd.DataFrame({"s": slot, "g": granule, "i": items})
        frame = frame[frame["i"].notna()]
        if not len(frame):
            return
        # each distinct item once per granule: a sketch update costs more than a hash lookup
        frame = frame.drop_duplicates()
        text = frame["i"].astype(str).tolist()
        for s, g, item in zip(frame["s"].tolist(), frame["g"].tolist(), text, strict=True):
            fine = self._levels(s)[0]
            sketch = fine.get(g)
            if sketch is None:
                sketch = fine[g] = ds.hll_sketch(self.precision, _HLL_TYPE)
            sketch.update(item)

    def add_sketches(self, slot: np.ndarray, granule: np.ndarray, blobs: np.ndarray) -> None:
        """Add serialized granule sketches (e.g. Spark's ``hll_sketch_agg``); None is none.

        Raises ValueError naming ``cell_hll`` on bytes that are no HLL sketch.
        """
        for s, g, blob in zip(slot.tolist(), granule.tolist(), blobs.tolist(), strict=True):
            if blob is None:
                continue
            try:
                sketch = ds.hll_sketch.deserialize(bytes(blob))
            except (RuntimeError, ValueError, TypeError) as exc:
                msg = f"`cell_hll` must hold DataSketches HLL sketches; got {exc}"
                raise ValueError(msg) from exc
            fine = self._levels(s)[0]
            fine[g] = sketch if g not in fine else self._merge(fine[g], sketch)

    # ------------------------------------------------------------------ reports
    def _fold(self, levels: list[dict[int, ds.hll_sketch]], G: int) -> None:
        """Move every cell that has left its level's range at ``G`` into the next level."""
        top = len(levels) - 1
        for k, cells in enumerate(levels):
            bound = G - self.n[k]
            while cells:
                end = next(iter(cells))
                if end > bound:
                    break
                sketch = cells.pop(end)
                if k == top:
                    continue
                step = self.s[k + 1]
                up = -(-end // step) * step
                above = levels[k + 1]
                above[up] = sketch if up not in above else self._merge(above[up], sketch)

    def estimates(self, slot: np.ndarray, level: np.ndarray, granule: np.ndarray) -> np.ndarray:
        """The distinct count of each report ``(slot, level, G)``.

        Reports must come as the chain emits them: per slot in granule order, and at one
        granule in level order (the levels that slide there, all finer ones sliding too).
        """
        out = np.zeros(len(slot), dtype=np.int64)
        i, n = 0, len(slot)
        slots, lvls, grans = slot.tolist(), level.tolist(), granule.tolist()
        while i < n:
            s, G = slots[i], grans[i]
            j = i
            while j < n and slots[j] == s and grans[j] == G:
                j += 1
            levels = self._levels(s)
            self._fold(levels, G)
            union = ds.hll_union(self.precision)
            want = {lvls[q]: q for q in range(i, j)}
            for k in range(max(want) + 1):
                for end, sketch in levels[k].items():
                    if end > G:  # level 0 may hold granules not final yet
                        break
                    union.update(sketch)
                if k in want:
                    out[want[k]] = round(canonical_estimate(union))
            i = j
        return out

    def horizon(self, slots: np.ndarray, g_front: int, s_rear: int) -> np.ndarray:
        """Per slot, the distinct count over the cells wholly in granules ``(s_rear, g_front]``
        (the rule of :meth:`MultiGranularAggregator.horizon`)."""
        out = np.zeros(len(slots), dtype=np.int64)
        for q, s in enumerate(slots.tolist()):
            levels = self._levels(s)
            union = ds.hll_union(self.precision)
            for k, cells in enumerate(levels):
                for end, sketch in cells.items():
                    if end - self.s[k] >= s_rear and end <= g_front:
                        union.update(sketch)
            out[q] = round(canonical_estimate(union))
        return out

    def drop(self, slots: np.ndarray) -> None:
        """Forget the sketches of ``slots`` (their chains hold nothing any more)."""
        for s in slots.tolist():
            if s < len(self.store):
                self.store[s] = None
            self.live.discard(s)

    def live_slots(self) -> np.ndarray:
        """Slots holding sketches."""
        return np.fromiter(sorted(self.live), np.int64, len(self.live))

    # ------------------------------------------------------------------ bytes
    def __getstate__(self) -> dict:
        """Pickle the sketches as their bytes (DataSketches' sketches do not pickle)."""
        return {"spec": self.spec, "precision": self.precision, "slots": len(self.store),
                "arrays": self.arrays()}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["spec"], state["precision"])
        self.load(state["arrays"], state["slots"])

    def keep(self, slots: np.ndarray) -> None:
        """Hold only the sketches of ``slots`` (increasing), renumbered ``0, 1, ...``, as the
        chain state's :meth:`~windowkit.core.multigranular.state.ChainState.keep` does."""
        store = self.store
        self.store = [store[s] if s < len(store) else None for s in slots.tolist()]
        self.live = {i for i, levels in enumerate(self.store) if levels is not None}

    def arrays(self, slots: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Every stored sketch as (slot, level, end, length) rows and their bytes, in order;
        of the slots in ``slots`` (increasing; default all), renumbered ``0, 1, ...``."""
        rows, blobs = [], []
        numbered = (enumerate(self.store) if slots is None else
                    ((i, self.store[s] if s < len(self.store) else None)
                     for i, s in enumerate(slots.tolist())))
        for s, levels in numbered:
            if levels is None:
                continue
            for k, cells in enumerate(levels):
                for end, sketch in cells.items():
                    blob = sketch.serialize_compact()
                    rows.append((s, k, end, len(blob)))
                    blobs.append(blob)
        index = np.array(rows, dtype=np.int64).reshape(-1, 4)
        data = np.frombuffer(b"".join(blobs), dtype=np.uint8)
        return {"hll_index": index, "hll_bytes": data}

    def load(self, arrays: dict[str, np.ndarray], n_slots: int) -> None:
        """Restore what :meth:`arrays` wrote; inconsistent bytes raise StateFormatError."""
        index = np.asarray(arrays["hll_index"], dtype=np.int64)
        data = np.asarray(arrays["hll_bytes"], dtype=np.uint8).tobytes()
        if index.ndim != 2 or index.shape[1] != 4 or int(index[:, 3].sum()) != len(data):
            msg = "multi-granular distinct sketches do not match their index"
            raise StateFormatError(msg)
        self.store = []
        self.live = set()
        pos = 0
        for s, k, end, length in index.tolist():
            if not (0 <= s < n_slots and 0 <= k < len(self.n)) or length <= 0:
                msg = f"multi-granular distinct sketch at slot {s}, level {k} is out of range"
                raise StateFormatError(msg)
            try:
                sketch = ds.hll_sketch.deserialize(data[pos:pos + length])
            except (RuntimeError, ValueError, TypeError) as exc:
                msg = f"multi-granular distinct sketch at slot {s}, level {k} is corrupt: {exc}"
                raise StateFormatError(msg) from exc
            pos += length
            self._levels(s)[k][end] = sketch
