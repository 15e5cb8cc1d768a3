"""Rows of operators with per-key state: keys as small integer codes, rows by key and time."""

from __future__ import annotations

import numpy as np
import pandas as pd

from windowkit.core.factorize import factorize


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
