"""Synthetic streams of the windowed Count-Min paper (Rivetti et al., Section 4).

Five distributions over the items ``0 .. n-1``; after every ``p`` samples the distribution is
shifted right (towards greater items, cyclically) by ``w`` positions, and after ``r`` shifts it
is back to the unshifted version. Readings where the paper gives no detail (said in each
docstring): the shift cycle has ``r + 1`` positions ``0, w, ..., r w`` (offset
``((i // p) mod (r + 1)) * w`` for sample ``i``); *normal* is a standard normal truncated to
``[-3, 3)`` spread over the ``n`` items (mode in the middle); *plateau* puts its ``w`` heavy items
at ``0 .. w-1`` before shifting.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from windowkit.core.validation import check_choice, check_int

Distribution = Literal["uniform", "normal", "zipf1", "zipf2", "plateau"]
DISTRIBUTIONS: tuple[str, ...] = ("uniform", "normal", "zipf1", "zipf2", "plateau")

MULTI_ORDER: tuple[str, ...] = (
    "uniform", "normal", "uniform", "zipf1", "uniform", "zipf2", "uniform", "plateau",
)
"""Order of the distribution swaps of the multi-distribution trace (Section 4.1)."""


def distribution_weights(distribution: Distribution, n: int = 1000, w: int = 2) -> np.ndarray:
    """Probabilities of the items ``0 .. n-1`` before any shift.

    Parameters
    ----------
    distribution : {"uniform", "normal", "zipf1", "zipf2", "plateau"}
        Uniform; truncated standard normal on ``[-3, 3)`` over the items; Zipf with exponent
        1 or 2 (item ``i`` has weight ``(i + 1) ** -alpha``); plateau: ``w`` items 100 times more
        probable than the other ``n - w``.
    n : int
        Number of distinct items.
    w : int
        Plateau width (the paper uses the shift width ``w``).

    Returns
    -------
    numpy.ndarray
        ``n`` probabilities summing to one.

    Examples
    --------
    >>> p = distribution_weights("plateau", n=10, w=2)
    >>> float(p[0] / p[5])
    100.0
    """
    check_choice("distribution", distribution, DISTRIBUTIONS)
    check_int("n", n, 1)
    idx = np.arange(n, dtype=np.float64)
    if distribution == "uniform":
        weights = np.ones(n)
    elif distribution == "normal":
        edges = -3.0 + 6.0 * np.arange(n + 1) / n
        from math import erf, sqrt

        cdf = np.array([0.5 * (1.0 + erf(x / sqrt(2.0))) for x in edges])
        weights = np.diff(cdf)
    elif distribution == "zipf1":
        weights = 1.0 / (idx + 1.0)
    elif distribution == "zipf2":
        weights = 1.0 / (idx + 1.0) ** 2
    else:
        check_int("w", w, 1, n)
        weights = np.ones(n)
        weights[:w] = 100.0
    return weights / weights.sum()


def _draw(rng: np.random.Generator, probs: np.ndarray, size: int) -> np.ndarray:
    cdf = np.cumsum(probs)
    cdf[-1] = 1.0
    return np.searchsorted(cdf, rng.random(size), side="right").astype(np.int64)


def shifting_stream(
    distribution: Distribution,
    m: int,
    *,
    n: int = 1000,
    w: int = 2,
    p: int = 10_000,
    r: int = 4,
    seed: int = 0,
) -> np.ndarray:
    """``m`` samples of ``distribution``, shifted by ``w`` every ``p`` samples, reset after ``r``.

    Defaults are the paper's (``n = 1,000``, ``w = 2 c1 = 2``, ``p = 10,000``, ``r = 4``).

    Examples
    --------
    >>> s = shifting_stream("zipf2", 30, n=100, w=5, p=10, r=4, seed=1)
    >>> s.dtype.name, int(s.min()) >= 0, int(s.max()) < 100
    ('int64', True, True)
    """
    check_int("m", m, 0)
    check_int("p", p, 1)
    check_int("r", r, 0)
    check_int("w", w, 0)
    rng = np.random.default_rng(seed)
    base = _draw(rng, distribution_weights(distribution, n, max(w, 1)), m)
    return (base + shift_offsets(0, m, n=n, w=w, p=p, r=r)) % n


def shift_offsets(start: int, stop: int, *, n: int, w: int, p: int, r: int) -> np.ndarray:
    """Shift of samples ``start .. stop-1``: ``((i // p) mod (r + 1)) * w`` modulo ``n``.

    Examples
    --------
    >>> shift_offsets(0, 12, n=100, w=3, p=2, r=2).tolist()
    [0, 0, 3, 3, 6, 6, 0, 0, 3, 3, 6, 6]
    """
    i = np.arange(start, stop, dtype=np.int64)
    return ((i // p) % (r + 1)) * w % n


def multi_distribution_stream(
    *,
    n: int = 1000,
    w: int = 2,
    p: int = 15_000,
    r: int = 4,
    swap_every: int = 60_000,
    order: tuple[str, ...] = MULTI_ORDER,
    seed: int = 0,
) -> np.ndarray:
    """The multi-distribution trace of Section 4.1: ``len(order) * swap_every`` samples.

    The distribution is swapped every ``swap_every`` samples in ``order`` (Uniform, Normal,
    Uniform, Zipf1, Uniform, Zipf2, Uniform, Plateau: 480,000 samples), while the shifts of
    :func:`shifting_stream` (``p = 15,000``) run over the whole trace.

    Examples
    --------
    >>> len(multi_distribution_stream(swap_every=100, p=25))
    800
    """
    rng = np.random.default_rng(seed)
    parts = []
    for k, name in enumerate(order):
        base = _draw(rng, distribution_weights(name, n, max(w, 1)), swap_every)
        offsets = shift_offsets(k * swap_every, (k + 1) * swap_every, n=n, w=w, p=p, r=r)
        parts.append((base + offsets) % n)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def zipf_ids(m: int, n_ids: int, alpha: float = 1.0, seed: int = 0) -> np.ndarray:
    """``m`` integer ids in ``0 .. n_ids-1`` with Zipf(``alpha``) frequencies (rank = id).

    Examples
    --------
    >>> ids = zipf_ids(1000, 50, seed=3)
    >>> int((ids == 0).sum()) > int((ids == 49).sum())
    True
    """
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_ids + 1, dtype=np.float64) ** alpha
    return _draw(rng, weights / weights.sum(), m)
