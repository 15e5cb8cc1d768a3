"""Per-level batch bookkeeping of PWW, vectorized over every key of a level at once.

A *table* is a set of stored rows of one level, sorted by (key slot, arrival sequence), so that
each (slot, batch) group and each window of two consecutive batches is a contiguous range.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Groups:
    """The (slot, batch) groups of a table: one entry per group."""

    slot: np.ndarray
    batch: np.ndarray
    lo: np.ndarray  # first table row of the group
    hi: np.ndarray  # one past its last row


def group_table(slot: np.ndarray, batch: np.ndarray) -> Groups:
    """Split a table sorted by (slot, batch) into its groups.

    Examples
    --------
    >>> g = group_table(np.array([0, 0, 0, 1]), np.array([3, 3, 4, 3]))
    >>> g.lo.tolist(), g.hi.tolist(), g.batch.tolist()
    ([0, 2, 3], [2, 3, 4], [3, 4, 3])
    """
    n = len(slot)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Groups(empty, empty, empty, empty)
    new = np.ones(n, dtype=bool)
    new[1:] = (slot[1:] != slot[:-1]) | (batch[1:] != batch[:-1])
    lo = np.flatnonzero(new)
    hi = np.append(lo[1:], n)
    return Groups(slot[lo], batch[lo], lo, hi)


def truncate_groups(
    slot: np.ndarray, batch: np.ndarray, partial: np.ndarray, keep: int
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2: of each (slot, batch) group longer than ``2 * keep`` rows, keep the first and
    last ``keep``. Returns the mask of kept rows and their new ``partial`` flags (a kept row's
    batch misses rows of its interval, here or at a lower level).

    Examples
    --------
    >>> mask, part = truncate_groups(np.zeros(5, int), np.zeros(5, int), np.zeros(5, bool), 2)
    >>> mask.tolist(), part[mask].tolist()
    ([True, True, False, True, True], [True, True, True, True])
    >>> truncate_groups(np.zeros(3, int), np.zeros(3, int), np.zeros(3, bool), 2)[0].tolist()
    [True, True, True]
    """
    groups = group_table(slot, batch)
    if len(slot) == 0:
        return np.zeros(0, dtype=bool), partial
    size = groups.hi - groups.lo
    gid = np.repeat(np.arange(len(size)), size)
    rank = np.arange(len(slot)) - groups.lo[gid]
    n = size[gid]
    mask = (rank < keep) | (rank >= n - keep)
    cut = size > 2 * keep
    any_partial = np.add.reduceat(partial.astype(np.int64), groups.lo) > 0
    new_partial = (cut | any_partial)[gid]
    return mask, new_partial


def stable_by_slot(slot: np.ndarray) -> np.ndarray:
    """The permutation sorting rows by slot, stably (rows of a slot keep their order).

    Examples
    --------
    >>> stable_by_slot(np.array([1, 0, 1, 0])).tolist()
    [1, 3, 0, 2]
    """
    if len(slot) < 2 or np.all(slot[1:] >= slot[:-1]):
        return np.arange(len(slot))
    return np.argsort(slot, kind="stable")
