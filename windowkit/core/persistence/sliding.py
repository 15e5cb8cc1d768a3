"""Persistent items over a sliding window of the ``n`` most recent slots (Algorithms 4-7)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from windowkit.core.persistence._base import SketchParameters, SlotStream, report_frame
from windowkit.core.persistence._cores import SlidingCore
from windowkit.core.persistence.config import PersistenceConfig
from windowkit.core.registry import register


@register()
class SlidingPersistentItemsSketch(SketchParameters, SlotStream):
    """Small-space tracking of alpha-persistent items in the window ``[c - n + 1, c]``.

    ``c`` is the current slot: the latest slot seen by :meth:`update` or passed to
    :meth:`advance`. Per tracked item the state holds, as in the paper's implementation
    section, a slot-ordered list of tuples ``(t', n_{d,t'})`` (one per slot ``t'`` in the window
    where ``h(d, t') < tau``; ``n_{d,t'}`` counts the distinct slots of ``d`` since ``t'``) and
    one last-seen slot shared by the list. When the current slot moves to ``c`` the tuples with
    ``t' <= c - n`` are dropped (Algorithm 6); a query reports ``d`` when the earliest remaining
    tuple has ``n_{d,t'} + 1/tau >= T`` (Algorithm 7). Tuples are also kept in a global ring in
    creation order so that expiry costs O(expired tuples).

    Guarantees (Lemmas 3.5-3.7): no item with window persistence ``< (alpha - epsilon) n`` is
    reported; an item with persistence ``>= alpha n`` is missed by one instance with
    probability at most ``e**-2`` (``delta`` unions ``ceil((1/2) ln(1/delta))`` instances);
    the expected number of tuples at slot ``c`` is ``tau * sum_d p_d^c``.

    Parameters
    ----------
    alpha, epsilon, n, delta, seed, allowed_lateness
        See :class:`~windowkit.core.persistence.config.PersistenceConfig` (``start`` is
        ignored).

    Examples
    --------
    >>> sk = SlidingPersistentItemsSketch(alpha=0.5, epsilon=0.25, n=8, seed=3)
    >>> sk.update([1, 2] * 4 + [1] * 8, [0, 0, 1, 1, 2, 2, 3, 3] + list(range(4, 12)))
    >>> sk.persistent_items().item.tolist()      # window [4, 11]
    [1]
    >>> sk.advance(18)                           # window [11, 18]: item 1 seen in 1 slot
    >>> sk.persistent_items().item.tolist()
    []
    """

    FORMAT_TAG = "PERSSLD"
    CONFIG = PersistenceConfig

    def __init__(
        self,
        alpha: float,
        epsilon: float,
        n: int,
        *,
        delta: float | None = None,
        seed: int = 0,
        allowed_lateness: int = 0,
    ) -> None:
        config = PersistenceConfig(
            alpha=alpha, epsilon=epsilon, n=n, delta=delta, seed=seed,
            allowed_lateness=allowed_lateness,
        )
        super().__init__(config)

    def _make_cores(self, kind: str) -> list[SlidingCore]:
        thr, all_pass = self.config.sample_threshold
        return [
            SlidingCore(self.config.n, thr, all_pass, salt, kind)
            for salt in self.config.salts()
        ]

    def _after_now(self) -> None:
        if self._now is not None:
            for core in self._cores or []:
                core.expire(self._now - self.config.n)

    def update(self, items: Any, slots: Any) -> None:
        """Add rows ``(items[i], slots[i])`` (Algorithm 5, vectorized over the batch).

        Examples
        --------
        >>> sk = SlidingPersistentItemsSketch(alpha=0.5, epsilon=0.1, n=20)
        >>> sk.update([5, 5, 6], [0, 1, 1])
        >>> sk.current_slot
        1
        """
        super().update(items, slots)

    def advance(self, slot: int) -> None:
        """Move the current slot to ``slot`` (Algorithm 6), even if no row arrived there.

        Raises ``ValueError`` if ``slot`` is before the current slot.

        Examples
        --------
        >>> sk = SlidingPersistentItemsSketch(alpha=0.5, epsilon=0.4, n=5)
        >>> sk.update([1, 1, 1], [0, 1, 2])
        >>> sk.advance(9)
        >>> sk.num_tuples, sk.current_slot
        (0, 9)
        """
        slot = int(slot)
        if self._now is not None and slot < self._now:
            msg = f"`slot` must not be before the current slot {self._now}; got {slot}"
            raise ValueError(msg)
        self._set_now(slot)

    def persistent_items(self) -> pd.DataFrame:
        """Items reported as alpha-persistent in the window ending at the current slot.

        Returns
        -------
        pandas.DataFrame
            Columns ``item`` and ``estimate`` (``n_{d,t'} + 1/tau``), sorted by item.

        Examples
        --------
        >>> sk = SlidingPersistentItemsSketch(alpha=0.5, epsilon=0.4, n=5)
        >>> sk.update(["x"] * 5, range(5))
        >>> sk.persistent_items().item.tolist()
        ['x']
        """
        state = self._flushed()
        parts = [core.heads()[:3] for core in state._cores or []]
        cfg = self.config
        return report_frame(parts, self._kind, "estimate", 1.0 / cfg.tau, cfg.min_count)

    def merge(self, other: SlidingPersistentItemsSketch) -> None:
        """Union with a sketch of an item-disjoint shard of the same stream.

        Both are first advanced to the later of their current slots.

        Examples
        --------
        >>> a = SlidingPersistentItemsSketch(alpha=0.5, epsilon=0.4, n=5)
        >>> b = SlidingPersistentItemsSketch(alpha=0.5, epsilon=0.4, n=5)
        >>> a.update([1] * 5, range(5)); b.update([2] * 3, range(3))
        >>> a.merge(b)
        >>> a.persistent_items().item.tolist()
        [1, 2]
        """
        self._merge_into(other)

