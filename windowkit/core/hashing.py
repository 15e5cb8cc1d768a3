"""Seeded, process-independent 64-bit hashing of integer and string arrays.

Python's ``hash()`` of a string changes between processes, which would make sketches built on
two executors unmergeable; these hashes depend only on the value's bytes and the seed.
"""

from __future__ import annotations

import numba
import numpy as np
import pandas as pd

from windowkit.core.factorize import factorize

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
    hashed with pandas' keyed SipHash (:func:`sip_hash`) and then mixed with the seed.

    Parameters
    ----------
    values : array-like of int or str
        The items.
    seed : int
        Selects the hash function; equal seeds give equal hashes in every process.
    categorize : bool
        Hash each distinct string once (pandas' ``categorize``); ``False`` when the strings
        are known to be distinct, where finding them costs three times the hashing. The
        hashes are the same either way, except for missing values (None, NaN).

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
        base = sip_hash(arr.astype(object), hash_key="windowkit-sip-k1", categorize=categorize)
    with np.errstate(over="ignore"):
        return splitmix64(base ^ seed_mix)


def sip_hash(values: np.ndarray, hash_key: str = "0123456789123456",
             categorize: bool = True) -> np.ndarray:
    """``pandas.util.hash_array`` of an object array, without merging strings at a NUL.

    pandas' ``categorize`` finds the distinct values with a hash table that stops reading a
    string at its first NUL character, so ``"a"`` and ``"a\\x00b"`` got one hash (pandas issue
    #34551). Here the distinct values are found by :func:`windowkit.core.factorize.factorize`;
    every hash of a string without NUL is the one pandas gives, and a missing value hashes to
    ``2**64 - 1`` as in pandas' categorized path.

    Parameters
    ----------
    values : numpy.ndarray of object
        The values, one-dimensional.
    hash_key : str
        pandas' 16-character SipHash key (its default by default).
    categorize : bool
        Hash each distinct value once; ``False`` hashes every value (and a missing one as its
        text), as pandas does.

    Returns
    -------
    numpy.ndarray of uint64

    Examples
    --------
    >>> h = sip_hash(np.array(["a", "a\\x00b", "a"], dtype=object))
    >>> bool(h[0] == h[2]), bool(h[0] == h[1])
    (True, False)
    """
    if not categorize:
        return pd.util.hash_array(values, hash_key=hash_key, categorize=False)
    codes, uniques = factorize(values)
    hashed = pd.util.hash_array(np.asarray(uniques, dtype=object), hash_key=hash_key,
                                categorize=False)
    if not len(hashed):
        return np.full(len(codes), np.iinfo(np.uint64).max, dtype=np.uint64)
    out = hashed[codes]
    out[codes < 0] = np.iinfo(np.uint64).max
    return out
