"""The seeded 2-universal hash family shared by every Count-Min variant, and its numba kernels.

An item is first reduced to a 64-bit key with :func:`windowkit.core.hashing.hash64` (seeded,
process independent; strings included). Row ``r`` then maps the key ``x = (x_hi, x_lo)`` (two
32-bit halves) to a column with Thorup's vector multiply-shift scheme::

    g_r(x) = ((a_r * x_lo + b_r * x_hi + c_r) mod 2**64) >> 32      # strongly universal, 32 bits
    h_r(x) = (g_r(x) * width) >> 32                                  # range reduction to [width]

with ``a_r, b_r, c_r`` 64-bit coefficients drawn from SplitMix64 of the seed, so for two distinct
keys ``P[h_r(x) = h_r(y)] <= 1/width + 2**-32`` (the 2-universal property the Count-Min bounds use).
For integer items the key mixing runs inside the same numba loop as the counter update; it is
bit-for-bit equal to ``hash64`` (a test checks it).
"""

from __future__ import annotations

import numba
import numpy as np

from windowkit.core.hashing import GOLDEN as _GOLDEN
from windowkit.core.hashing import hash64, mix64, splitmix64

_LOW32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


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


def item_keys(items: object) -> tuple[np.ndarray, bool]:
    """Return ``(array, mixed)``: raw uint64 view of integer items (``mixed=False``, the kernel
    mixes them) or ``hash64`` keys of any other items with seed applied later (``mixed=True``)."""
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


def prepare(items: object, seed: int) -> tuple[np.ndarray, bool]:
    """Keys ready for the kernels: integers stay raw (``mix=True``), others are hashed here."""
    arr, is_other = item_keys(items)
    if not is_other:
        return arr, True
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint64), False
    if arr.dtype == object:  # an integer hashes the same inside a mixed batch
        is_int = np.fromiter(
            (isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr),
            dtype=bool, count=arr.size,
        )
        if is_int.any():
            keys = np.empty(arr.size, dtype=np.uint64)
            keys[is_int] = hash64(arr[is_int].astype(np.int64), seed=seed)
            if not is_int.all():
                keys[~is_int] = hash64(arr[~is_int], seed=seed)
            return keys, False
    return np.ascontiguousarray(hash64(arr, seed=seed)), False


_mix = mix64


@numba.njit(cache=True, inline="always")
def _column(x: np.uint64, a: np.uint64, b: np.uint64, c: np.uint64, width: np.uint64) -> int:
    g = (a * (x & _LOW32) + b * (x >> _S32) + c) >> _S32
    return int((g * width) >> _S32)


@numba.njit(cache=True)
def columns_kernel(keys, mix, smix, coeffs, width):
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
            out[r, i] = _column(x, coeffs[0, r], coeffs[1, r], coeffs[2, r], w)
    return out


@numba.njit(cache=True)
def add_kernel(keys, mix, smix, coeffs, counts, sign):
    """``counts[r, h_r(key)] += sign`` for every key and row (counts is int64 or float64)."""
    depth = coeffs.shape[1]
    w = np.uint64(counts.shape[1])
    for i in range(keys.size):
        x = keys[i]
        if mix:
            x = _mix(x ^ smix)
        for r in range(depth):
            counts[r, _column(x, coeffs[0, r], coeffs[1, r], coeffs[2, r], w)] += sign


def columns(keys: np.ndarray, mix: bool, seed: int, depth: int, width: int) -> np.ndarray:
    """Columns ``h_r(item)`` of prepared keys, shape ``(depth, n)``.

    Examples
    --------
    >>> keys, mix = prepare([1, 2, 3], seed=0)
    >>> columns(keys, mix, 0, 2, 28).shape
    (2, 3)
    """
    return columns_kernel(keys, mix, seed_mix(seed), row_coefficients(seed, depth), width)


def add(keys: np.ndarray, mix: bool, seed: int, counts: np.ndarray, sign: int = 1) -> None:
    """Add ``sign`` to the cell of every key in every row of ``counts`` (in place)."""
    if keys.size:
        coeffs = row_coefficients(seed, counts.shape[0])
        add_kernel(keys, mix, seed_mix(seed), coeffs, counts, counts.dtype.type(sign))
