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


_XXH_PRIMES = (11400714785074694791, 14029467366897019727, 1609587929392839161,
               9650029242287828579, 2870177450012600261)
_MASK64 = (1 << 64) - 1
#: The seed of Spark's ``xxhash64``.
SPARK_HASH_SEED = 42


def spark_xxhash64(value: int | str | bytes) -> int:
    """Spark's ``xxhash64`` of one value, as its SQL function gives it (seed 42, a signed
    long): an integer hashed as a ``bigint``, text as its UTF-8 bytes, bytes as they are. It
    is the key :func:`windowkit.spark.countmin.item_key` gives an item in the JVM, for items
    known in Python (e.g. a list of candidates).

    Examples
    --------
    >>> spark_xxhash64(1), spark_xxhash64("1")
    (-7001672635703045582, -928762887014768240)
    """
    if isinstance(value, bool) or not isinstance(value, int | str | bytes):
        msg = f"`value` must be an integer, a text or bytes; got {type(value).__name__}"
        raise ValueError(msg)
    data = (value.encode() if isinstance(value, str) else value if isinstance(value, bytes)
            else (value & _MASK64).to_bytes(8, "little"))
    h = _xxh64(data, SPARK_HASH_SEED)
    return h - (1 << 64) if h >= 1 << 63 else h


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK64


def _xxh_round(acc: int, lane: int) -> int:
    p1, p2 = _XXH_PRIMES[0], _XXH_PRIMES[1]
    return _rotl((acc + lane * p2) & _MASK64, 31) * p1 & _MASK64


def _xxh64(data: bytes, seed: int) -> int:
    """XXH64 (Yann Collet's reference algorithm) of ``data``, as an unsigned 64-bit int."""
    p1, p2, p3, p4, p5 = _XXH_PRIMES
    n, pos = len(data), 0
    if n >= 32:
        lanes = [(seed + p1 + p2) & _MASK64, (seed + p2) & _MASK64, seed & _MASK64,
                 (seed - p1) & _MASK64]
        while pos + 32 <= n:
            for i in range(4):
                lanes[i] = _xxh_round(lanes[i], int.from_bytes(data[pos:pos + 8], "little"))
                pos += 8
        h = (_rotl(lanes[0], 1) + _rotl(lanes[1], 7) + _rotl(lanes[2], 12)
             + _rotl(lanes[3], 18)) & _MASK64
        for lane in lanes:
            h = ((h ^ _xxh_round(0, lane)) * p1 + p4) & _MASK64
    else:
        h = (seed + p5) & _MASK64
    h = (h + n) & _MASK64
    while pos + 8 <= n:
        h ^= _xxh_round(0, int.from_bytes(data[pos:pos + 8], "little"))
        h = (_rotl(h, 27) * p1 + p4) & _MASK64
        pos += 8
    if pos + 4 <= n:
        h ^= int.from_bytes(data[pos:pos + 4], "little") * p1 & _MASK64
        h = (_rotl(h, 23) * p2 + p3) & _MASK64
        pos += 4
    while pos < n:
        h ^= data[pos] * p5 & _MASK64
        h = _rotl(h, 11) * p1 & _MASK64
        pos += 1
    h ^= h >> 33
    h = h * p2 & _MASK64
    h ^= h >> 29
    h = h * p3 & _MASK64
    return h ^ (h >> 32)
