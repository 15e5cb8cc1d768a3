"""Persistent items in a stream (Lahiri, Tirthapura, Chandrashekar), engine-free.

An item's persistence in a window is the number of distinct timeslots of the window in which
it appears. :class:`PersistentItemsSketch` (fixed window) and
:class:`SlidingPersistentItemsSketch` (the ``n`` most recent slots) report the items whose
persistence is at least ``alpha n`` in space about ``tau = 2 / (epsilon n)`` times the number of
distinct (item, slot) pairs; :class:`ExactPersistence` is the naive algorithm they are compared
with.

Examples
--------
>>> from windowkit.core.persistence import PersistentItemsSketch
>>> sk = PersistentItemsSketch(alpha=0.6, epsilon=0.2, n=20, delta=0.01)
>>> sk.update([1, 2] * 5 + [1] * 15, [t for t in range(5) for _ in "ab"] + list(range(5, 20)))
>>> sk.persistent_items().item.tolist(), sk.instances
([1], 3)
"""

from windowkit.core.persistence.config import ExactConfig, PersistenceConfig, WindowKind
from windowkit.core.persistence.exact import ExactPersistence
from windowkit.core.persistence.fixed import PersistentItemsSketch
from windowkit.core.persistence.sliding import SlidingPersistentItemsSketch

__all__ = [
    "ExactConfig",
    "ExactPersistence",
    "PersistenceConfig",
    "PersistentItemsSketch",
    "SlidingPersistentItemsSketch",
    "WindowKind",
]
