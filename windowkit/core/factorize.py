"""Distinct values of a column, exact for every string.

pandas (2.x) finds distinct strings with a hash table keyed on C strings, so two strings equal
up to their first NUL character are one value to it (``"a"`` and ``"a\\x00b"``; pandas issues
#34551 and #53720, fixed only in pandas 3.1). Keys, items and stored strings are the user's
data: two of them must never merge. Strings are found distinct here by Arrow, which compares
their lengths and bytes; other objects by pandas, which compares them as Python objects.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pandas.api.types import infer_dtype

__all__ = ["factorize"]


def factorize(values: np.ndarray | pd.Series | list) -> tuple[np.ndarray, np.ndarray]:
    """Codes and distinct values, in order of first appearance; missing values get code -1.

    Like ``pandas.factorize(values, use_na_sentinel=True)``, except that strings differing
    after a NUL character stay distinct.

    Parameters
    ----------
    values : array-like, one-dimensional
        The values; ``None`` and NaN are missing.

    Returns
    -------
    codes : numpy.ndarray of int64
        For each value, its position in ``uniques``, or -1 when missing.
    uniques : numpy.ndarray
        The distinct values (object dtype for strings and other objects).

    Examples
    --------
    >>> codes, uniques = factorize(np.array(["a", "a\\x00b", None, "a"], dtype=object))
    >>> codes.tolist(), uniques.tolist()
    ([0, 1, -1, 0], ['a', 'a\\x00b'])
    >>> factorize(np.array([3, 1, 3]))[0].tolist()
    [0, 1, 0]
    """
    arr = values.to_numpy() if isinstance(values, pd.Series) else np.asarray(values)
    if arr.dtype.kind == "U":
        arr = arr.astype(object)
    if arr.dtype != object or infer_dtype(arr, skipna=True) != "string":
        codes, uniques = pd.factorize(arr, use_na_sentinel=True)
        return codes.astype(np.int64, copy=False), np.asarray(uniques)
    encoded = pa.array(arr, type=pa.large_string(), from_pandas=True).dictionary_encode()
    codes = pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int64, copy=False)
    return codes, arr[_first_of_each(codes)]


def _first_of_each(codes: np.ndarray) -> np.ndarray:
    """Where each code first appears, for codes numbered in order of first appearance.

    The distinct values are taken from the input, not from Arrow's text, so that they are the
    very objects pandas would return (a ``str`` subclass such as an Enum member stays one).
    """
    highest = np.maximum.accumulate(codes)
    return np.flatnonzero(np.diff(highest, prepend=-1) > 0)
