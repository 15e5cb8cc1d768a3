"""Validated, immutable parameters of the persistent-item algorithms."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from windowkit.core.hashing import splitmix64
from windowkit.core.validation import check_choice, check_in_range, check_int

WindowKind = Literal["fixed", "sliding"]
"""``"fixed"``: one window of ``n`` slots; ``"sliding"``: the ``n`` most recent slots."""

_SLOT_LIMIT = 2**62


@dataclass(frozen=True)
class PersistenceConfig:
    """Parameters of a persistent-items sketch (Lahiri, Tirthapura, Chandrashekar).

    Parameters
    ----------
    alpha : float
        Persistence threshold in (0, 1]: an item is alpha-persistent when it appears in at
        least ``alpha * n`` distinct slots of the window.
    epsilon : float
        Uncertainty in (0, alpha): items with persistence below ``(alpha - epsilon) * n`` are
        never reported.
    n : int
        Window length in slots (>= 1).
    delta : float or None
        False-negative probability in (0, 1). ``None`` runs one instance, whose miss
        probability per persistent item is at most ``e**-2``; otherwise
        ``ceil((1/2) ln(1/delta))`` independent instances are run and their reports unioned.
    seed : int
        Selects the hash function h(d, t); sketches with equal seeds are mergeable.
    allowed_lateness : int
        How many slots a row may lag behind the latest slot seen (0 .. n-1). Rows of the
        last ``allowed_lateness`` slots are buffered until no earlier slot can arrive.
    start : int
        First slot of the fixed window ``[start, start + n)`` (ignored by sliding sketches).

    Examples
    --------
    >>> cfg = PersistenceConfig(alpha=0.5, epsilon=0.1, n=100)
    >>> cfg.tau, cfg.threshold, cfg.instances
    (0.2, 45.0, 1)
    >>> PersistenceConfig(alpha=0.5, epsilon=0.1, n=100, delta=0.01).instances
    3
    >>> PersistenceConfig(alpha=0.3, epsilon=0.3, n=10)
    Traceback (most recent call last):
    ...
    ValueError: `epsilon` must be smaller than `alpha`; got epsilon=0.3, alpha=0.3
    """

    alpha: float
    epsilon: float
    n: int
    delta: float | None = None
    seed: int = 0
    allowed_lateness: int = 0
    start: int = 0

    def __post_init__(self) -> None:
        check_in_range("alpha", self.alpha, 0, 1, low_open=True)
        check_in_range("epsilon", self.epsilon, 0, 1, low_open=True)
        if self.epsilon >= self.alpha:
            msg = (
                "`epsilon` must be smaller than `alpha`; "
                f"got epsilon={self.epsilon!r}, alpha={self.alpha!r}"
            )
            raise ValueError(msg)
        object.__setattr__(self, "n", check_int("n", self.n, 1))
        if self.delta is not None:
            check_in_range("delta", self.delta, 0, 1, low_open=True, high_open=True)
        object.__setattr__(self, "seed", check_int("seed", self.seed, 0, 2**64 - 1))
        lateness = check_int("allowed_lateness", self.allowed_lateness, 0, self.n - 1)
        object.__setattr__(self, "allowed_lateness", lateness)
        start = check_int("start", self.start, -_SLOT_LIMIT, _SLOT_LIMIT)
        object.__setattr__(self, "start", start)

    @property
    def tau(self) -> float:
        """Sampling probability ``2 / (epsilon n)`` (capped at 1 when drawing)."""
        return 2.0 / (self.epsilon * self.n)

    @property
    def threshold(self) -> float:
        """Report threshold ``T = alpha n - epsilon n / 2``."""
        return self.alpha * self.n - self.epsilon * self.n / 2

    @property
    def min_count(self) -> int:
        """Smallest tracked count ``n_d`` with ``n_d + 1/tau >= T``, i.e. ``ceil((alpha-eps) n)``.

        ``(alpha - epsilon) n`` is rounded to 9 decimals first so that float noise (``0.7 * 10
        = 7.000000000000001``) cannot move the cutoff by one slot.
        """
        return max(1, math.ceil(round((self.alpha - self.epsilon) * self.n, 9)))

    @property
    def instances(self) -> int:
        """Number of independent instances, ``ceil((1/2) ln(1/delta))`` (1 without delta)."""
        if self.delta is None:
            return 1
        return max(1, math.ceil(round(0.5 * math.log(1.0 / self.delta), 9)))

    @property
    def sample_threshold(self) -> tuple[int, bool]:
        """``(floor(tau 2**64), tau >= 1)``: ``h(d, t)`` is sampled when below the first."""
        if self.tau >= 1.0:
            return 2**64 - 1, True
        return int(self.tau * 2.0**64), False

    def salts(self) -> list[int]:
        """One 64-bit salt per instance, derived from ``seed``."""
        base = np.array(
            [(self.seed + 0x632BE59BD9B4E019 * (i + 1)) % 2**64 for i in range(self.instances)],
            dtype=np.uint64,
        )
        return [int(s) for s in splitmix64(base)]

    def to_dict(self) -> dict[str, Any]:
        """The parameters as a JSON-friendly dict."""
        return asdict(self)


@dataclass(frozen=True)
class ExactConfig:
    """Parameters of the naive (exact) algorithm.

    Examples
    --------
    >>> ExactConfig(n=10, window="sliding").window
    'sliding'
    """

    n: int
    window: WindowKind = "fixed"
    seed: int = 0
    allowed_lateness: int = 0
    start: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("n", self.n, 1))
        check_choice("window", self.window, ("fixed", "sliding"))
        object.__setattr__(self, "seed", check_int("seed", self.seed, 0, 2**64 - 1))
        lateness = check_int("allowed_lateness", self.allowed_lateness, 0, self.n - 1)
        object.__setattr__(self, "allowed_lateness", lateness)
        start = check_int("start", self.start, -_SLOT_LIMIT, _SLOT_LIMIT)
        object.__setattr__(self, "start", start)

    def to_dict(self) -> dict[str, Any]:
        """The parameters as a JSON-friendly dict."""
        return asdict(self)
