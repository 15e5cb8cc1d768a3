"""Stable grouping of rows by a small integer key (a counting sort).

Operators that keep per-key state process a batch key by key; sorting by key is then the
costliest step of the batch. A counting sort reads the rows once and writes each row straight to
its key's region, where ``argsort`` plus one gather per column reads them three to four times.
"""

from __future__ import annotations

import sys

import numba
import numpy as np
import pandas as pd

from windowkit.core.factorize import factorize


def group_rows_by_slot(
    slot: np.ndarray, n_slots: int, time: np.ndarray, codes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows reordered by ``slot`` (stable: rows of a slot keep their order).

    Parameters
    ----------
    slot : numpy.ndarray of int
        Each row's key slot, in ``[0, n_slots)``.
    n_slots : int
        Number of slots.
    time : numpy.ndarray of int64
        Carried along.
    codes : numpy.ndarray of int8
        Carried along.

    Returns
    -------
    tuple of numpy.ndarray
        ``slot`` (int64), ``time`` and ``codes``, grouped by slot.

    Examples
    --------
    >>> s, t, c = group_rows_by_slot(np.array([1, 0, 1, 0]), 2, np.array([5, 6, 7, 8]),
    ...                              np.array([1, 0, 1, 0], dtype=np.int8))
    >>> s.tolist(), t.tolist(), c.tolist()
    ([0, 0, 1, 1], [6, 8, 5, 7], [0, 0, 1, 1])
    """
    slot = np.asarray(slot, dtype=np.int64)
    time = np.asarray(time, dtype=np.int64)
    codes = np.asarray(codes, dtype=np.int8)
    counts = np.bincount(slot, minlength=n_slots)
    starts = np.zeros(n_slots + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    if len(time) and _PACKED_MIN <= time.min() and time.max() <= _PACKED_MAX:
        # The scatter's cost is its number of output streams (each key's write position in
        # each one must stay in cache), so one packed stream is written instead of three;
        # the slots are rebuilt from the counts and the fields split in sequential passes.
        packed = _scatter_packed(slot, starts, time, codes)
        # the code is the low byte: on a little-endian machine, the first byte of each word
        low_byte = 0 if sys.byteorder == "little" else 7
        out_codes = packed.view(np.int8)[low_byte::8].copy()
        return np.repeat(np.arange(n_slots, dtype=np.int64), counts), packed >> 8, out_codes
    return _scatter(slot, starts, time, codes)


# a time and its int8 code share one int64 when the time fits in 55 bits (µs: years 828-3111)
_PACKED_MIN, _PACKED_MAX = -(2**55), 2**55 - 1


@numba.njit(cache=True)
def _scatter_packed(slot, starts, time, codes):  # pragma: no cover - compiled
    position = starts[:-1].copy()
    out = np.empty(len(slot), dtype=np.int64)
    for i in range(len(slot)):
        s = slot[i]
        j = position[s]
        position[s] = j + 1
        out[j] = (time[i] << 8) | (np.int64(codes[i]) & 0xFF)
    return out


@numba.njit(cache=True)
def _scatter(slot, starts, time, codes):  # pragma: no cover - compiled
    n = len(slot)
    position = starts[:-1].copy()
    out_slot = np.empty(n, dtype=np.int64)
    out_time = np.empty(n, dtype=np.int64)
    out_codes = np.empty(n, dtype=np.int8)
    for i in range(n):
        s = slot[i]
        j = position[s]
        position[s] = j + 1
        out_slot[j] = s
        out_time[j] = time[i]
        out_codes[j] = codes[i]
    return out_slot, out_time, out_codes


def sort_each_key_by_time(
    slot: np.ndarray, time: np.ndarray, codes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows already grouped by ``slot``, with each group's rows stably sorted by ``time``.

    Only groups that are out of order are sorted, each on its own: real streams are mostly in
    order per key, and sorting a few short groups costs far less than one sort of all rows.

    Examples
    --------
    >>> s, t, c = sort_each_key_by_time(np.array([0, 0, 1, 1]), np.array([6, 5, 7, 8]),
    ...                                 np.array([0, 1, 0, 1], dtype=np.int8))
    >>> t.tolist(), c.tolist()
    ([5, 6, 7, 8], [1, 0, 0, 1])
    """
    starts = np.flatnonzero(np.r_[True, slot[1:] != slot[:-1], True])
    time = np.array(time, dtype=np.int64)
    codes = np.array(codes, dtype=np.int8)
    _sort_segments(starts, time, codes)
    return slot, time, codes


@numba.njit(cache=True)
def _sort_segments(starts, time, codes):  # pragma: no cover - compiled
    for k in range(len(starts) - 1):
        lo, hi = starts[k], starts[k + 1]
        # A few rows out of place cost an insertion sort little; past a budget of moves
        # the segment is far from sorted and goes to merge sort. Both are stable, and a
        # partial insertion sort keeps equal times in their order, so the result is the same.
        if not _insertion_sort(time, codes, lo, hi, 4 * (hi - lo)):
            order = np.argsort(time[lo:hi], kind="mergesort") + lo
            time[lo:hi] = time[order]
            codes[lo:hi] = codes[order]


@numba.njit(cache=True, inline="always")
def _insertion_sort(time, codes, lo, hi, budget):  # pragma: no cover - compiled
    """Stable insertion sort of ``[lo, hi)`` by time; False if it gave up after ``budget``."""
    moves = 0
    for i in range(lo + 1, hi):
        t = time[i]
        if t >= time[i - 1]:
            continue
        c = codes[i]
        j = i - 1
        while j >= lo and time[j] > t:
            time[j + 1] = time[j]
            codes[j + 1] = codes[j]
            j -= 1
        moves += i - 1 - j
        time[j + 1] = t
        codes[j + 1] = c
        if moves > budget:
            return False
    return True


def key_time_order(slot: np.ndarray, time: np.ndarray) -> np.ndarray | None:
    """A stable order of rows by ``slot``, then ``time``; None when the rows are in ``time``
    order already (an operator that folds each key's rows then groups what it made by key,
    which is cheaper than sorting every row).

    One sort, where ordering by time and then grouping by key takes two and a gather of
    every column in between: the key and the time as one int64 when they fit in one (the
    time relative to the batch's earliest), else ``lexsort``.

    Parameters
    ----------
    slot : numpy.ndarray of int64
        Each row's key slot, non-negative.
    time : numpy.ndarray of int64
        Each row's time.

    Examples
    --------
    >>> key_time_order(np.array([1, 0, 1]), np.array([5, 7, 2])).tolist()
    [1, 2, 0]
    >>> key_time_order(np.array([1, 0]), np.array([5, 7])) is None
    True
    """
    if len(time) < 2 or np.all(time[1:] >= time[:-1]):
        return None
    low = int(time.min())
    span = int(time.max()) - low + 1
    if (int(slot.max()) + 1) * span < 2**63:
        return np.argsort(slot * np.int64(span) + (time - low), kind="stable")
    return np.lexsort((time, slot))


def factorize_keys(key: np.ndarray | pd.Series | pd.Categorical) -> tuple[np.ndarray, np.ndarray]:
    """Codes and uniques of the keys; categorical keys come with their codes already.

    Examples
    --------
    >>> codes, uniques = factorize_keys(pd.Categorical(["b", "a", "b"], ["a", "b", "c"]))
    >>> codes.tolist(), uniques.tolist()
    ([1, 0, 1], ['a', 'b'])
    """
    if isinstance(key, pd.Series) and isinstance(key.dtype, pd.CategoricalDtype):
        key = key.array
    if isinstance(key, pd.Categorical):
        categories = np.asarray(key.categories, dtype=object)
        codes = np.asarray(key.codes, dtype=np.int64)
        if (codes < 0).any():
            msg = "`key` must not be null"
            raise ValueError(msg)
        present = np.bincount(codes, minlength=len(categories)) > 0
        if present.all():
            return codes, categories
        remap = np.cumsum(present) - 1  # unused categories must not become keys
        return remap[codes], categories[present]
    codes, uniques = factorize(key)
    if (codes < 0).any():
        msg = "`key` must not be null"
        raise ValueError(msg)
    return codes.astype(np.int64), np.asarray(uniques)
