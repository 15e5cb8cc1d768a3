"""Synthetic1 and Synthetic2: the persistent-items paper's generated streams (its Table 1).

The universe ``{1, ..., m}`` is randomly permuted (Fisher-Yates) and cut into ten groups; group
``i`` holds a fraction ``F_i`` of the universe and each of its items appears in each slot,
independently, with probability ``P_i``, once (one ``(item, slot)`` tuple). The paper used
``m = 4,000,000`` and 2,880 slots (about 1.02 G tuples for Synthetic1, 123 M for Synthetic2);
``universe_size`` and ``n_slots`` scale that down. The expected number of tuples is
``m * n_slots * sum_i F_i P_i`` (see :func:`expected_tuples`).

Generation is vectorized and costs O(tuples): each group's Bernoulli(``P_i``) grid of
``n_slots x group_size`` is drawn as geometric gaps between successes (between failures when
``P_i > 1/2``). Rows come sorted by slot; within a slot they are in random order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from windowkit.core.validation import check_int

SYNTHETIC1 = (
    (0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.55),
    (0.95, 0.75, 0.55, 0.35, 0.25, 0.15, 0.1, 0.05, 0.01, 0.001),
)
"""Table 1, Synthetic1: (fractions F_i, persistences P_i)."""

SYNTHETIC2 = (
    (0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.01, 0.1, 0.862),
    (0.95, 0.75, 0.55, 0.35, 0.25, 0.15, 0.1, 0.05, 0.01, 0.001),
)
"""Table 1, Synthetic2: (fractions F_i, persistences P_i)."""


@dataclass(frozen=True)
class PersistentStream:
    """A generated stream of ``(item, slot)`` tuples, sorted by slot.

    Attributes
    ----------
    items, slots : numpy.ndarray of int64
        The tuples.
    n_slots, universe_size : int
        Slots ``0 .. n_slots - 1``; items ``1 .. universe_size``.
    group_of : numpy.ndarray of int8
        ``group_of[d - 1]`` is the group (0..9) of item ``d``.
    persistences : tuple of float
        ``P_i`` of each group.
    """

    items: np.ndarray
    slots: np.ndarray
    n_slots: int
    universe_size: int
    group_of: np.ndarray
    persistences: tuple[float, ...]

    def __len__(self) -> int:
        return int(self.items.size)


def expected_tuples(universe_size: int, n_slots: int, table: tuple = SYNTHETIC1) -> float:
    """``m * n_slots * sum_i F_i P_i`` (Table 1's "Exp. packets" for the paper's sizes).

    Examples
    --------
    >>> round(expected_tuples(4_000_000, 2880, SYNTHETIC1))
    1024704000
    >>> round(expected_tuples(4_000_000, 2880, SYNTHETIC2))
    123402240
    """
    fractions, persistences = table
    mean = sum(f * p for f, p in zip(fractions, persistences, strict=True))
    return universe_size * n_slots * mean


def grouped_stream(
    fractions: tuple[float, ...],
    persistences: tuple[float, ...],
    universe_size: int,
    n_slots: int,
    seed: int = 0,
) -> PersistentStream:
    """Generate a stream where group ``i`` (a fraction ``F_i`` of the items) appears in each
    slot with probability ``P_i``.

    Examples
    --------
    >>> s = grouped_stream((0.5, 0.5), (1.0, 0.0), universe_size=4, n_slots=3, seed=1)
    >>> len(s), sorted(set(s.items.tolist())) == sorted(set(s.items[s.slots == 0].tolist()))
    (6, True)
    """
    check_int("universe_size", universe_size, 1)
    check_int("n_slots", n_slots, 1)
    if len(fractions) != len(persistences) or abs(sum(fractions) - 1.0) > 1e-9:
        msg = f"`fractions` must sum to 1 and match `persistences`; got {fractions}"
        raise ValueError(msg)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(universe_size).astype(np.int64) + 1
    sizes = np.floor(np.asarray(fractions) * universe_size).astype(np.int64)
    sizes[-1] = universe_size - sizes[:-1].sum()
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    group_of = np.empty(universe_size, dtype=np.int8)
    item_parts, slot_parts = [], []
    for g, (size, p) in enumerate(zip(sizes.tolist(), persistences, strict=False)):
        members = perm[offsets[g] : offsets[g + 1]]
        group_of[members - 1] = g
        if size == 0 or p <= 0:
            continue
        cells = _bernoulli_cells(rng, n_slots * size, p)
        slot_parts.append(cells // size)
        item_parts.append(members[cells % size])
    if item_parts:
        items = np.concatenate(item_parts)
        slots = np.concatenate(slot_parts)
    else:
        items = slots = np.empty(0, dtype=np.int64)
    # sort by slot; random order within a slot
    shuffle = rng.permutation(items.size)
    order = shuffle[np.argsort(slots[shuffle], kind="stable")]
    return PersistentStream(
        items=items[order], slots=slots[order].astype(np.int64), n_slots=n_slots,
        universe_size=universe_size, group_of=group_of, persistences=tuple(persistences),
    )


def _bernoulli_cells(rng: np.random.Generator, cells: int, p: float) -> np.ndarray:
    """Indices in ``[0, cells)`` of independent Bernoulli(p) successes, in O(p cells)."""
    if p >= 1.0:
        return np.arange(cells, dtype=np.int64)
    if p > 0.5:
        mask = np.ones(cells, dtype=bool)
        mask[_bernoulli_cells(rng, cells, 1.0 - p)] = False
        return np.flatnonzero(mask).astype(np.int64)
    out = []
    pos = -1
    while True:
        need = int((cells - pos) * p * 1.1) + 64
        gaps = rng.geometric(p, size=need).astype(np.int64)
        idx = pos + np.cumsum(gaps)
        inside = idx[idx < cells]
        out.append(inside)
        if inside.size < idx.size:
            break
        pos = int(idx[-1])
    return np.concatenate(out)


def synthetic1(universe_size: int = 40_000, n_slots: int = 288, seed: int = 0) -> PersistentStream:
    """Synthetic1 of Table 1, scaled (the paper: ``universe_size=4_000_000, n_slots=2880``).

    Mean persistence 0.089; skewness of persistence 5.67.

    Examples
    --------
    >>> s = synthetic1(universe_size=2000, n_slots=50, seed=7)
    >>> abs(len(s) / expected_tuples(2000, 50, SYNTHETIC1) - 1) < 0.05
    True
    """
    return grouped_stream(*SYNTHETIC1, universe_size, n_slots, seed)


def synthetic2(universe_size: int = 40_000, n_slots: int = 288, seed: int = 0) -> PersistentStream:
    """Synthetic2 of Table 1, scaled (mean persistence 0.01; skewness 17.17).

    Examples
    --------
    >>> s = synthetic2(universe_size=2000, n_slots=50, seed=7)
    >>> int(s.slots.min()), int(s.slots.max())
    (0, 49)
    """
    return grouped_stream(*SYNTHETIC2, universe_size, n_slots, seed)


def to_ipv4(items: np.ndarray) -> np.ndarray:
    """Integer ids as dotted IPv4 strings (object array), e.g. for string-item benchmarks.

    Examples
    --------
    >>> to_ipv4(np.array([1, 2**24 + 258])).tolist()
    ['0.0.0.1', '1.0.1.2']
    """
    v = np.asarray(items, dtype=np.int64) & 0xFFFFFFFF
    octets = [((v >> s) & 255).astype(str).astype(object) for s in (24, 16, 8, 0)]
    dot = np.array(".", dtype=object)
    return octets[0] + dot + octets[1] + dot + octets[2] + dot + octets[3]
