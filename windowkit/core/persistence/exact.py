"""The naive (exact) algorithm: the baseline the paper compares against."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from windowkit.core.persistence._base import SlotStream, check_fixed_window, report_frame
from windowkit.core.persistence._cores import FixedCore, SlidingCore
from windowkit.core.persistence.config import ExactConfig, WindowKind
from windowkit.core.registry import register
from windowkit.core.validation import check_in_range


@register()
class ExactPersistence(SlotStream):
    """Exact persistence of every item, as the paper's naive algorithm keeps it.

    * ``window="fixed"``: one tuple ``(d, p_d, t_d)`` per distinct item of ``[start, start+n)``
      (count plus last-seen slot, Giroire et al.), so ``num_tuples`` is the distinct count.
    * ``window="sliding"``: one tuple per distinct ``(d, t)`` of the window ``[c - n + 1, c]``
      ("the naive algorithm creates a new tuple for an item every time it appears in a
      different slot"), so ``num_tuples`` is ``sum_d p_d^c``.

    It shares the sketches' hash table, slot-order rules and vectorized kernels, so speed and
    memory comparisons between the two are like for like.

    Parameters
    ----------
    n : int
        Window length in slots.
    window : {"fixed", "sliding"}
        Which window is tracked.
    seed : int
        Seed of the item hash used as the table key.
    allowed_lateness, start : int
        As for the sketches.

    Examples
    --------
    >>> ex = ExactPersistence(n=4, window="sliding")
    >>> ex.update(["a", "a", "b", "a"], [0, 1, 1, 3])
    >>> ex.persistence().values.tolist()
    [['a', 3], ['b', 1]]
    >>> ex.advance(4)
    >>> ex.persistent_items(alpha=0.5).values.tolist()
    [['a', 2]]
    """

    FORMAT_TAG = "PERSEXA"
    CONFIG = ExactConfig

    def __init__(
        self,
        n: int,
        *,
        window: WindowKind = "fixed",
        seed: int = 0,
        allowed_lateness: int = 0,
        start: int = 0,
    ) -> None:
        super().__init__(
            ExactConfig(n=n, window=window, seed=seed, allowed_lateness=allowed_lateness,
                        start=start)
        )

    def _make_cores(self, kind: str) -> list[Any]:
        if self.config.window == "fixed":
            return [FixedCore(0, True, 0, kind)]
        return [SlidingCore(self.config.n, 0, True, 0, kind)]

    def _check_slots(self, slots: Any, lo: int, hi: int) -> None:
        if self.config.window == "fixed":
            check_fixed_window(slots, self.config.start, self.config.n, (lo, hi))

    def _after_now(self) -> None:
        if self.config.window == "sliding" and self._now is not None:
            for core in self._cores or []:
                core.expire(self._now - self.config.n)

    def advance(self, slot: int) -> None:
        """Move the current slot to ``slot`` (the sliding window drops older slots).

        Examples
        --------
        >>> ex = ExactPersistence(n=2, window="sliding")
        >>> ex.update([1, 1], [0, 1]); ex.advance(2)
        >>> ex.num_tuples
        1
        """
        slot = int(slot)
        if self._now is not None and slot < self._now:
            msg = f"`slot` must not be before the current slot {self._now}; got {slot}"
            raise ValueError(msg)
        self._set_now(slot)

    def persistence(self) -> pd.DataFrame:
        """Persistence of every item of the window: columns ``item``, ``persistence``.

        Examples
        --------
        >>> ex = ExactPersistence(n=3)
        >>> ex.update([4, 4, 4, 5], [0, 0, 2, 2])
        >>> ex.persistence().persistence.tolist()
        [2, 1]
        """
        return self._report(1)

    def persistent_items(self, alpha: float) -> pd.DataFrame:
        """Items with persistence ``>= alpha n``: columns ``item``, ``persistence``.

        Examples
        --------
        >>> ex = ExactPersistence(n=3)
        >>> ex.update([4, 4, 4, 5], [0, 0, 2, 2])
        >>> ex.persistent_items(0.6).item.tolist()
        [4]
        """
        check_in_range("alpha", alpha, 0, 1, low_open=True)
        return self._report(max(1, math.ceil(round(alpha * self.config.n, 9))))

    def _report(self, min_count: int) -> pd.DataFrame:
        state = self._flushed()
        if self.config.window == "fixed":
            parts = [core.counts() for core in state._cores or []]
        else:
            parts = [(k, v, length) for k, v, _, length in
                     (core.heads() for core in state._cores or [])]
        return report_frame(parts, self._kind, "persistence", 0, min_count)

    def merge(self, other: ExactPersistence) -> None:
        """Union with the exact state of an item-disjoint shard.

        Examples
        --------
        >>> a, b = ExactPersistence(n=3), ExactPersistence(n=3)
        >>> a.update([1], [0]); b.update([2, 2], [0, 1])
        >>> a.merge(b); a.persistence().persistence.tolist()
        [1, 2]
        """
        self._merge_into(other)
