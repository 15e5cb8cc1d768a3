"""Persistent items over a fixed window (Algorithms 1-3, with delta amplification)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from windowkit.core.persistence._base import (
    SketchParameters,
    SlotStream,
    check_fixed_window,
    report_frame,
)
from windowkit.core.persistence._cores import FixedCore
from windowkit.core.persistence.config import PersistenceConfig
from windowkit.core.registry import register


@register()
class PersistentItemsSketch(SketchParameters, SlotStream):
    """Small-space tracking of alpha-persistent items over the fixed window ``[start, start+n)``.

    Each instance keeps a tuple ``(d, n_d, t_d)`` only for items that passed the hash filter
    ``h(d, t) < tau`` in some slot ``t`` (``tau = 2 / (epsilon n)``); from then on it counts the
    distinct slots of ``d`` exactly. ``d`` is reported when ``n_d + 1/tau >= T`` with
    ``T = alpha n - epsilon n / 2`` (the paper's Lemma 3.5 reads "(alpha - epsilon n)" for
    ``(alpha - epsilon) n``), with estimate ``n_d + 1/tau``.

    Guarantees (Theorem 3.1):

    * no item with persistence ``< (alpha - epsilon) n`` is ever reported (deterministic);
    * an item with persistence ``>= alpha n`` is missed by one instance with probability at most
      ``e**-2``; with ``delta`` the sketch runs ``ceil((1/2) ln(1/delta))`` instances with
      independent hash functions and unions their reports, so the miss probability is at most
      ``delta``;
    * one instance holds ``sum_d min(1, 2 tau p_d)`` tuples in expectation (Lemma 3.3).

    The report test is evaluated as ``n_d >= ceil((alpha - epsilon) n)``, which is
    ``n_d + 1/tau >= T`` in exact arithmetic. Items are integers or strings; strings are
    identified by a seeded 64-bit hash (two strings colliding are one item, probability about
    ``m**2 / 2**65`` for ``m`` distinct strings). ``merge`` unions sketches of item-disjoint
    shards of one stream (the hash is deterministic, so the union equals the sketch of the
    whole stream).

    Parameters
    ----------
    alpha, epsilon, n, delta, seed, allowed_lateness, start
        See :class:`~windowkit.core.persistence.config.PersistenceConfig`.

    Examples
    --------
    >>> sk = PersistentItemsSketch(alpha=0.5, epsilon=0.2, n=10, seed=1)
    >>> sk.update([7, 8, 7, 8] + [7] * 8, [0, 0, 1, 1] + list(range(2, 10)))
    >>> sk.persistent_items()      # tau = 1: every (d, t) is sampled, estimate = 10 + 1/tau
       item  estimate
    0     7      11.0
    >>> sk.num_tuples, sk.tau
    (2, 1.0)
    """

    FORMAT_TAG = "PERSFIX"
    CONFIG = PersistenceConfig

    def __init__(
        self,
        alpha: float,
        epsilon: float,
        n: int,
        *,
        delta: float | None = None,
        seed: int = 0,
        start: int = 0,
        allowed_lateness: int = 0,
    ) -> None:
        config = PersistenceConfig(
            alpha=alpha, epsilon=epsilon, n=n, delta=delta, seed=seed,
            allowed_lateness=allowed_lateness, start=start,
        )
        super().__init__(config)

    def _make_cores(self, kind: str) -> list[FixedCore]:
        thr, all_pass = self.config.sample_threshold
        return [FixedCore(thr, all_pass, salt, kind) for salt in self.config.salts()]

    def _check_slots(self, slots: np.ndarray, lo: int, hi: int) -> None:
        check_fixed_window(slots, self.config.start, self.config.n, (lo, hi))

    def update(self, items: Any, slots: Any) -> None:
        """Add rows ``(items[i], slots[i])`` (Algorithm 2, vectorized over the batch).

        Parameters
        ----------
        items : array-like of int or str
            Item identifiers.
        slots : array-like of int
            Their timeslots, non-decreasing up to ``allowed_lateness``, in the window.

        Examples
        --------
        >>> sk = PersistentItemsSketch(alpha=0.5, epsilon=0.1, n=4)
        >>> sk.update(["a", "b", "a"], [0, 0, 1])
        >>> sk.current_slot
        1
        """
        super().update(items, slots)

    def persistent_items(self) -> pd.DataFrame:
        """Items reported as alpha-persistent (Algorithm 3), unioned over instances.

        Returns
        -------
        pandas.DataFrame
            Columns ``item`` and ``estimate`` (``n_d + 1/tau``, float64), sorted by item.

        Examples
        --------
        >>> sk = PersistentItemsSketch(alpha=0.5, epsilon=0.25, n=8)
        >>> sk.update([1] * 8, range(8))
        >>> sk.persistent_items().item.tolist()
        [1]
        """
        state = self._flushed()
        parts = [core.counts() for core in state._cores or []]
        cfg = self.config
        return report_frame(parts, self._kind, "estimate", 1.0 / cfg.tau, cfg.min_count)

    def merge(self, other: PersistentItemsSketch) -> None:
        """Union with a sketch of an item-disjoint shard of the same stream.

        Raises ``ValueError`` for itself, a different configuration or shared items.

        Examples
        --------
        >>> a = PersistentItemsSketch(alpha=0.5, epsilon=0.25, n=4)
        >>> b = PersistentItemsSketch(alpha=0.5, epsilon=0.25, n=4)
        >>> a.update([1, 1], [0, 1]); b.update([2, 2, 2], [0, 1, 2])
        >>> a.merge(b)
        >>> a.persistent_items().item.tolist()
        [1, 2]
        """
        self._merge_into(other)

