"""The order rows reach an operator in: by time (or by key and time), and rows tied at one
time by their contents, so that no result depends on the order the rows arrived in.

Rows tied at one time (or at one key and time) are ordered by the input columns they carry
(values, keys, items), compared by value: a categorical column by its categories' values, not
its codes (which depend on arrival), text and bytes by their ranks, floats by every bit (so that
``-0.0`` comes before ``0.0``; missing values last). Rows equal in every such column are
interchangeable and keep their arrival order.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from windowkit.core.factorize import factorize

Column = np.ndarray | pd.Series | pd.Categorical
#: Bits of an int64 other than its sign.
_MAGNITUDE = np.int64(2**63 - 1)


def time_order(time: np.ndarray, columns: list[Column] | tuple[Column, ...] = ()
               ) -> np.ndarray | None:
    """The order of rows by time, rows at one time by ``columns`` (the first first); None
    when the times strictly increase already (no work: the common case).

    Parameters
    ----------
    time : numpy.ndarray of int64
        Each row's time.
    columns : sequence of array-like
        The rows' other input columns, each as long as ``time``.

    Examples
    --------
    >>> time_order(np.array([2, 1, 2]), [np.array(["b", "x", "a"], dtype=object)]).tolist()
    [1, 2, 0]
    >>> time_order(np.array([1, 2, 3])) is None
    True
    """
    if len(time) < 2 or np.all(time[1:] > time[:-1]):
        return None
    if np.all(time[1:] >= time[:-1]):
        order, tied = None, time[1:] == time[:-1]
    else:
        order = np.argsort(time, kind="stable")
        ordered = time[order]
        tied = ordered[1:] == ordered[:-1]
    return break_ties(order, tied, columns, len(time))


def break_ties(order: np.ndarray | None, tied: np.ndarray, columns: list[Column] | tuple[
        Column, ...], n: int) -> np.ndarray | None:
    """``order`` (None: the rows as they are) with each run of tied rows ordered by
    ``columns``; ``order`` itself when nothing ties (or there are no columns).

    Only the tied rows are ranked and sorted, so that a few ties cost little.

    Parameters
    ----------
    order : numpy.ndarray of int64 or None
        An order of the ``n`` rows.
    tied : numpy.ndarray of bool
        Of length ``n - 1``: whether the row at each position of ``order`` after the first
        ties with the one before it.
    columns : sequence of array-like
        The columns to order a tie's rows by (the first first), in the rows' own order.
    n : int
        The number of rows.

    Examples
    --------
    >>> break_ties(None, np.array([False, True]), [np.array([5.0, 2.0, 1.0])], 3).tolist()
    [0, 2, 1]
    """
    if not tied.any() or not len(columns):
        return order
    at, run = _tied_rows(tied)
    rows = at if order is None else order[at]
    order = np.arange(n) if order is None else order.copy()
    order[at] = rows[_sort_runs(run, list(columns), rows)]
    return order


def _tied_rows(tied: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions of the rows in a tie, and for each the number of its tie (increasing)."""
    in_tie = np.zeros(len(tied) + 1, dtype=bool)
    in_tie[1:] = tied
    in_tie[:-1] |= tied
    at = np.flatnonzero(in_tie)
    return at, np.concatenate([[0], np.cumsum(~tied)])[at]


def _sort_runs(run: np.ndarray, columns: list[Column], rows: np.ndarray) -> np.ndarray:
    """A stable order of ``rows`` by ``run`` (non-decreasing, from 0), then the ranks of
    ``columns`` at ``rows``.

    The run and as many ranks as fit go into one int64, sorted at once (several times faster
    than ``lexsort``, and the rows come nearly sorted); only rows still tied then are ranked
    and sorted by the other columns. A rank too wide to pack beside the run (a float's bits)
    is sorted by ``lexsort``.
    """
    key, span, used = run, int(run[-1]) + 1, 0
    for column in columns:
        ranks = rank(column, rows)
        low, width = int(ranks.min()), int(ranks.max()) - int(ranks.min()) + 1
        if span * width >= 2**63:
            break
        key, span, used = key * np.int64(width) + (ranks - low), span * width, used + 1
    if used:
        order = np.argsort(key, kind="stable")
        sorted_keys = [key[order]]
    else:  # the first rank does not fit beside the run
        order, used = np.lexsort((ranks, run)), 1
        sorted_keys = [run[order], ranks[order]]
    rest = columns[used:]
    if not rest:
        return order
    tied = np.ones(len(order) - 1, dtype=bool)
    for k in sorted_keys:
        tied &= k[1:] == k[:-1]
    if not tied.any():
        return order
    at, sub_run = _tied_rows(tied)
    within = order[at]
    order[at] = within[_sort_runs(sub_run, rest, rows[within])]
    return order


def rank(column: Column, rows: np.ndarray | None = None) -> np.ndarray:
    """Integers (int64) that order the values of ``column`` (at ``rows``, if given) as
    their values compare, whatever their order: equal values, equal ranks.

    Categorical values rank by their categories' values, not their codes; text, bytes and
    other objects by value (missing first, then by type name); floats by their bits (``-0.0``
    before ``0.0``, missing values last).

    Examples
    --------
    >>> rank(pd.Categorical(["b", "a", "b"], ["b", "a"])).tolist()
    [2, 1, 2]
    >>> rank(np.array(["b", None, "a"], dtype=object)).tolist()
    [2, 0, 1]
    >>> rank(np.array(["a", b"a", b"0"], dtype=object)).tolist()  # bytes, then text
    [3, 2, 1]
    >>> rank(np.array([0.0, np.nan, -0.0, -1.0])).argsort().tolist()
    [3, 2, 0, 1]
    """
    if isinstance(column, pd.Series):
        column = column.array if isinstance(column.dtype, pd.CategoricalDtype) else (
            column.to_numpy())
    if isinstance(column, pd.Categorical):
        codes = np.asarray(column.codes, dtype=np.int64)
        by_value = _object_rank(np.asarray(column.categories, dtype=object))
        ranks = np.append(by_value, 0)  # code -1 (missing) takes the last entry: 0
        return ranks[codes if rows is None else codes[rows]]
    values = np.asarray(column)
    values = values if rows is None else values[rows]
    kind = values.dtype.kind
    if kind == "f":
        return float_rank(values)
    if kind == "u" and values.dtype.itemsize == 8:  # order kept past 2**63
        return (values ^ np.uint64(2**63)).view(np.int64)
    if kind in "mM":
        return values.view(np.int64)
    if kind in "biu":
        return values.astype(np.int64, copy=False)
    return _object_rank(values)


def float_rank(value: np.ndarray) -> np.ndarray:
    """Integers ordering floats by value, ``-0.0`` before ``0.0``, every NaN last (as one
    value): the IEEE total order of their bits.

    Examples
    --------
    >>> float_rank(np.array([1.0, np.nan, -0.0, 0.0, -np.inf])).argsort().tolist()
    [4, 2, 3, 0, 1]
    """
    bits = np.asarray(value, dtype=np.float64).view(np.int64)
    ranks = np.where(bits < 0, bits ^ _MAGNITUDE, bits)  # a negative's magnitude, reversed
    return np.where(np.isnan(value), np.iinfo(np.int64).max, ranks)


def _object_rank(values: np.ndarray) -> np.ndarray:
    """Ranks of objects (text, bytes, ...) by value: the sorted position of each distinct one
    (:func:`~windowkit.core.factorize.factorize`, exact for every string), missing first."""
    codes, uniques = factorize(values)
    try:
        by_value = np.argsort(uniques, kind="stable")
    except TypeError:  # mixed types (text and bytes): by type name, then value
        by_value = np.array(sorted(range(len(uniques)), key=lambda i: (
            type(uniques[i]).__name__, uniques[i])), dtype=np.int64)
    position = np.empty(len(uniques) + 1, dtype=np.int64)
    position[by_value] = np.arange(1, len(uniques) + 1)
    position[-1] = 0  # code -1 (missing)
    return position[codes]


def key_time_order(slot: np.ndarray, time: np.ndarray,
                   columns: list[Column] | tuple[Column, ...] = ()) -> np.ndarray | None:
    """An order of rows by ``slot``, then ``time``, rows at one slot and time by ``columns``
    (:func:`break_ties`); None when the rows are in ``time`` order already with no such ties
    (an operator that folds each key's rows then groups what it made by key, which is cheaper
    than sorting every row). Rows in time order with ties and ``columns`` stay in time order,
    each time's rows by slot and ``columns``.

    One sort, where ordering by time and then grouping by key takes two and a gather of
    every column in between: the key and the time as one int64 when they fit in one (the
    time relative to the batch's earliest), else ``lexsort``.

    Parameters
    ----------
    slot : numpy.ndarray of int64
        Each row's key slot, non-negative.
    time : numpy.ndarray of int64
        Each row's time.
    columns : sequence of array-like
        The rows' input columns that order rows of one key at one time (the first first).

    Examples
    --------
    >>> key_time_order(np.array([1, 0, 1]), np.array([5, 7, 2])).tolist()
    [1, 2, 0]
    >>> key_time_order(np.array([1, 0]), np.array([5, 7])) is None
    True
    >>> key_time_order(np.array([0, 1, 0]), np.array([5, 5, 5]), [np.array([3.0, 1.0, 2.0])]
    ...                ).tolist()
    [2, 0, 1]
    """
    if len(time) < 2 or np.all(time[1:] > time[:-1]):
        return None
    if np.all(time[1:] >= time[:-1]):
        if not len(columns):
            return None
        return break_ties(None, time[1:] == time[:-1], [slot, *columns], len(time))
    low = int(time.min())
    span = int(time.max()) - low + 1
    if (int(slot.max()) + 1) * span < 2**63:
        order = np.argsort(slot * np.int64(span) + (time - low), kind="stable")
    else:
        order = np.lexsort((time, slot))
    slot_of, time_of = slot[order], time[order]
    tied = (time_of[1:] == time_of[:-1]) & (slot_of[1:] == slot_of[:-1])
    return break_ties(order, tied, columns, len(time))


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
