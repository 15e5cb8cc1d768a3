"""The hash families of every Count-Min variant, and their numba kernels.

Two families, chosen per sketch by its configuration's ``hashing``:

``"multiply-shift"`` (the default): seeded and 2-universal, described below.

``"spark"``: Apache Spark's own Count-Min (``CountMinSketchImpl``, the ``count_min_sketch``
aggregate). Row ``r`` maps an int64 key ``x`` to::

    h = a_r * x  (mod 2**64, signed);  h += h >> 32;  h &= 2**31 - 1;  column = h mod width

with ``a_r`` the ``r``-th ``java.util.Random(seed).nextInt(2**31 - 1)``. Integer items are their
own keys (no seed mixing), so a matrix Spark builds from a ``long`` column in the JVM is, cell for
cell, the matrix this family builds from the same values: windowkit's Spark layer sketches in the
JVM with it. Its guarantee is weaker on paper (multiplication modulo ``2**64`` then a fold, not a
proven 2-universal family), so windowkit feeds it well-mixed keys: ``xxhash64`` of the items.

An item is first reduced to a 64-bit key with :func:`windowkit.core.hashing.hash64` (seeded,
process independent; strings included). Row ``r`` then maps the key ``x = (x_hi, x_lo)`` (two
32-bit halves) to a column with Thorup's vector multiply-shift scheme::

    g_r(x) = ((a_r * x_lo + b_r * x_hi + c_r) mod 2**64) >> 32      # strongly universal, 32 bits
    h_r(x) = (g_r(x) * width) >> 32                                  # range reduction to [width]

with ``a_r, b_r, c_r`` 64-bit coefficients drawn from SplitMix64 of the seed, so for two distinct
keys ``P[h_r(x) = h_r(y)] <= 1/width + 2**-32`` (the 2-universal property the Count-Min bounds use).
For integer items the key mixing runs inside the same numba loop as the counter update; it is
bit-for-bit equal to ``hash64`` (a test checks it).

The kernels take ``(smix, coeffs, spark)`` from :func:`kernel_args` of a configuration (any
object with ``seed``, ``depth`` and ``hashing``).
"""

from __future__ import annotations

import functools
from typing import Any, Literal

import numba
import numpy as np

from windowkit.core.hashing import GOLDEN as _GOLDEN
from windowkit.core.hashing import hash64, mix64, splitmix64

HashFamily = Literal["multiply-shift", "spark"]
"""``"multiply-shift"`` (seeded, 2-universal) or ``"spark"`` (Spark's ``CountMinSketch``)."""
HASH_FAMILIES: tuple[str, ...] = ("multiply-shift", "spark")
SPARK_MAX_SEED = 2**31 - 1
"""Spark's ``count_min_sketch`` takes an ``int`` seed."""

_LOW32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_JAVA_MULTIPLIER = 0x5DEECE66D
_JAVA_MASK = (1 << 48) - 1


def seed_mix(seed: int) -> np.uint64:
    """The 64-bit value ``hash64`` xors into every key for ``seed``."""
    return splitmix64(np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0]


def row_coefficients(seed: int, depth: int) -> np.ndarray:
    """``(3, depth)`` uint64 coefficients ``a, b, c`` of the row hashes for ``seed``.

    Examples
    --------
    >>> row_coefficients(7, 2).shape
    (3, 2)
    """
    base = np.uint64(seed & 0xFFFFFFFFFFFFFFFF) ^ np.uint64(0xC0FFEE123456789)
    idx = np.arange(1, 3 * depth + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        coeffs = splitmix64(splitmix64(base + idx * _GOLDEN))
    coeffs = coeffs.reshape(3, depth)
    coeffs[0] |= np.uint64(1)  # odd multipliers
    coeffs[1] |= np.uint64(1)
    return coeffs


def spark_multipliers(seed: int, depth: int) -> np.ndarray:
    """Spark's row multipliers ``hashA``: ``java.util.Random(seed).nextInt(2**31 - 1)``, ``depth``
    times (the LCG of ``java.util.Random``, so no JVM is needed to hash like Spark).

    Examples
    --------
    >>> spark_multipliers(0, 2).tolist()
    [1569741360, 1785505948]
    """
    return np.array(_java_random_ints(seed, depth), dtype=np.int64)


@functools.lru_cache(maxsize=64)
def _java_random_ints(seed: int, depth: int) -> tuple[int, ...]:
    """Computed once per (seed, depth): every update and query hashes with them."""
    state = (seed ^ _JAVA_MULTIPLIER) & _JAVA_MASK
    bound = 2**31 - 1
    out = []
    for _ in range(depth):
        while True:  # Random.nextInt(bound) for a bound that is not a power of two
            state = (state * _JAVA_MULTIPLIER + 0xB) & _JAVA_MASK
            u = state >> 17  # next(31): the top 31 of the 48 bits, never negative
            r = u % bound
            if u - r + bound - 1 < 2**31:  # Java retries when this int sum overflows
                break
        out.append(r)
    return tuple(out)


def row_coefficients_for(config: Any) -> np.ndarray:
    """``(3, depth)`` uint64 row coefficients of a configuration's family (for ``"spark"``,
    row 0 holds the multipliers ``a_r`` and the others are unused)."""
    if config.hashing == "spark":
        coeffs = np.zeros((3, config.depth), dtype=np.uint64)
        coeffs[0] = spark_multipliers(config.seed, config.depth).view(np.uint64)
        return coeffs
    return row_coefficients(config.seed, config.depth)


def kernel_args(config: Any) -> tuple[np.uint64, np.ndarray, bool]:
    """``(smix, coeffs, spark)``: what the kernels need to hash with ``config``'s family."""
    return seed_mix(config.seed), row_coefficients_for(config), config.hashing == "spark"


def item_keys(items: object) -> tuple[np.ndarray, bool]:
    """Return ``(array, other)``: the raw uint64 view of integer items (``other=False``; the
    multiply-shift kernels mix them with the seed, the Spark family hashes them as they are)
    or the items themselves for any other kind (``other=True``; :func:`prepare` hashes them
    with ``hash64``)."""
    if hasattr(items, "to_numpy"):
        arr = items.to_numpy()
    elif isinstance(items, np.ndarray):
        arr = items
    else:  # a list: keep each element's own type (numpy would turn [1, "a"] into strings)
        arr = np.empty(len(items), dtype=object)
        arr[:] = list(items)
        if arr.size and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr
        ):
            arr = arr.astype(np.int64)
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if arr.dtype.kind in "iub":
        return np.ascontiguousarray(arr.astype(np.int64, copy=False)).view(np.uint64), False
    return np.ascontiguousarray(arr), True


def prepare(items: object, config: Any) -> tuple[np.ndarray, bool]:
    """Keys ready for the kernels: integers stay raw (``mix=True`` for the multiply-shift family,
    which mixes them with the seed in the kernel; the Spark family hashes them as they are),
    others are hashed here with ``hash64``."""
    seed = config.seed
    arr, is_other = item_keys(items)
    if not is_other:
        return arr, config.hashing != "spark"
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint64), False
    if arr.dtype == object:  # an integer hashes the same inside a mixed batch
        is_int = np.fromiter(
            (isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr),
            dtype=bool, count=arr.size,
        )
        if is_int.any():
            keys = np.empty(arr.size, dtype=np.uint64)
            ints = arr[is_int].astype(np.int64)
            if config.hashing == "spark":
                keys[is_int] = ints.view(np.uint64)
            else:
                keys[is_int] = hash64(ints, seed=seed)
            if not is_int.all():
                keys[~is_int] = hash64(arr[~is_int], seed=seed)
            return keys, False
    return np.ascontiguousarray(hash64(arr, seed=seed)), False


_mix = mix64


@numba.njit(cache=True, inline="always")
def _column(x: np.uint64, a: np.uint64, b: np.uint64, c: np.uint64, width: np.uint64,
            spark: bool) -> int:
    if spark:  # int64 arithmetic wraps like Java's long; >> is arithmetic, as in Java
        h = np.int64(a) * np.int64(x)
        h += h >> np.int64(32)
        h &= np.int64(0x7FFFFFFF)
        return np.int64(h % np.int64(width))
    g = (a * (x & _LOW32) + b * (x >> _S32) + c) >> _S32
    return np.int64((g * width) >> _S32)


@numba.njit(cache=True)
def columns_kernel(keys, mix, smix, coeffs, width, spark):
    """``(depth, n)`` int64 columns of ``n`` keys."""
    depth = coeffs.shape[1]
    n = keys.size
    out = np.empty((depth, n), dtype=np.int64)
    w = np.uint64(width)
    for i in range(n):
        x = keys[i]
        if mix:
            x = _mix(x ^ smix)
        for r in range(depth):
            out[r, i] = _column(x, coeffs[0, r], coeffs[1, r], coeffs[2, r], w, spark)
    return out


@numba.njit(cache=True)
def add_kernel(keys, mix, smix, coeffs, counts, sign, spark):
    """``counts[r, h_r(key)] += sign`` for every key and row (counts is int64 or float64)."""
    depth = coeffs.shape[1]
    w = np.uint64(counts.shape[1])
    for i in range(keys.size):
        x = keys[i]
        if mix:
            x = _mix(x ^ smix)
        for r in range(depth):
            counts[r, _column(x, coeffs[0, r], coeffs[1, r], coeffs[2, r], w, spark)] += sign


def columns(keys: np.ndarray, mix: bool, config: Any) -> np.ndarray:
    """Columns ``h_r(item)`` of prepared keys under ``config`` (its seed, depth, width and
    family), shape ``(depth, n)``.

    Examples
    --------
    >>> from windowkit.core.sketches import CountMinConfig
    >>> cfg = CountMinConfig(2, 28)
    >>> keys, mix = prepare([1, 2, 3], cfg)
    >>> columns(keys, mix, cfg).shape
    (2, 3)
    """
    smix, coeffs, spark = kernel_args(config)
    return columns_kernel(keys, mix, smix, coeffs, config.width, spark)


def add(keys: np.ndarray, mix: bool, config: Any, counts: np.ndarray, sign: int = 1) -> None:
    """Add ``sign`` to the cell of every key in every row of ``counts`` (in place), hashed with
    ``config``'s seed and family."""
    if keys.size:
        smix, coeffs, spark = kernel_args(config)
        add_kernel(keys, mix, smix, coeffs, counts, counts.dtype.type(sign), spark)
