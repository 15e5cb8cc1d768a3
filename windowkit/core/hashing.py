"""Seeded, process-independent 64-bit hashing of integer and string arrays.

Python's ``hash()`` of a string changes between processes, which would make sketches built on
two executors unmergeable; these hashes depend only on the value's bytes and the seed.
"""

from __future__ import annotations

import numba
import numpy as np
import pandas as pd

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S27, _S30, _S31 = np.uint64(27), np.uint64(30), np.uint64(31)


@numba.njit(cache=True, inline="always")
def mix64(x: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    """SplitMix64 of one uint64 inside numba kernels; equals :func:`splitmix64` elementwise.

    Examples
    --------
    >>> int(mix64(np.uint64(1))) == int(splitmix64(np.array([1], dtype=np.uint64))[0])
    True
    """
    z = x + GOLDEN
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The SplitMix64 finalizer applied elementwise to a uint64 array.

    Examples
    --------
    >>> import numpy as np
    >>> splitmix64(np.array([0, 1], dtype=np.uint64)).dtype
    dtype('uint64')
    """
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64, copy=True) + GOLDEN
        z = (z ^ (z >> _S30)) * _M1
        z = (z ^ (z >> _S27)) * _M2
        return z ^ (z >> _S31)


def hash64(values: np.ndarray | pd.Series | list, seed: int = 0,
           categorize: bool = True) -> np.ndarray:
    """Hash integers or strings to uint64, deterministically for a given ``seed``.

    Integers are mixed with SplitMix64 (vectorized numpy); strings and other objects are
    hashed with pandas' keyed SipHash (``pandas.util.hash_array``) and then mixed with the seed.

    Parameters
    ----------
    values : array-like of int or str
        The items.
    seed : int
        Selects the hash function; equal seeds give equal hashes in every process.
    categorize : bool
        Hash each distinct string once (pandas' ``categorize``); ``False`` when the strings
        are known to be distinct, where finding them costs three times the hashing. The
        hashes are the same either way.

    Returns
    -------
    numpy.ndarray of uint64

    Examples
    --------
    >>> import numpy as np
    >>> a = hash64(np.array([1, 2, 3]), seed=7)
    >>> bool((a == hash64([1, 2, 3], seed=7)).all())
    True
    >>> bool(hash64(["10.0.0.1"], seed=1)[0] == hash64(["10.0.0.1"], seed=1)[0])
    True
    """
    arr = values.to_numpy() if isinstance(values, pd.Series) else np.asarray(values)
    seed_mix = splitmix64(np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0]
    if arr.dtype.kind in "iub":
        base = arr.astype(np.int64, copy=False).view(np.uint64)
    else:
        base = pd.util.hash_array(arr.astype(object), hash_key="windowkit-sip-k1",
                                    categorize=categorize)
    with np.errstate(over="ignore"):
        return splitmix64(base ^ seed_mix)
