"""Brute-force references for the Count-Min sketches, written from the paper's listings.

All work on *columns* (``cols[i]`` is ``h_i(j)`` of a sample in row ``i``), one sample at a time,
so they share nothing with the vectorized code but the hash of each item.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Hashable, Sequence

import numpy as np


def exact_window_counts(
    items: Sequence[Hashable], ticks: Sequence[int] | None, now: int, window: int
) -> Counter:
    """Exact frequency of each item among the samples of steps ``now - window + 1 .. now``.

    ``ticks=None`` means the i-th item is step ``i`` (count-based window).

    Examples
    --------
    >>> exact_window_counts(["a", "b", "a", "c"], None, now=3, window=3)
    Counter({'b': 1, 'a': 1, 'c': 1})
    """
    ticks = range(len(items)) if ticks is None else ticks
    return Counter(x for x, t in zip(items, ticks, strict=True) if now - window < t <= now)


def vanilla_counts(cols: np.ndarray, width: int) -> np.ndarray:
    """Listing 2.1: the count matrix of samples whose columns are ``cols`` (``(depth, n)``).

    Examples
    --------
    >>> vanilla_counts(np.array([[0, 1, 1]]), 3).tolist()
    [[1, 2, 0]]
    """
    depth = cols.shape[0]
    counts = np.zeros((depth, width), dtype=np.int64)
    for j in range(cols.shape[1]):
        for i in range(depth):
            counts[i, cols[i, j]] += 1
    return counts


class _EagerSteps:
    """Shared by the eager listings: a count-based sample is one step, then the sample."""

    counts: np.ndarray

    def tick(self) -> None:  # pragma: no cover - every listing defines its own step
        raise NotImplementedError

    def add(self, cols: Sequence[int]) -> None:
        """Increment the sample's cells at the current step."""
        for i, c in enumerate(cols):
            self.counts[i, int(c)] += 1

    def sample(self, cols: Sequence[int]) -> None:
        """A count-based step with its sample."""
        self.tick()
        self.add(cols)


class EagerProportional(_EagerSteps):
    """Listing 3.3, per step: snapshot at ``m' = 0``, add the sample, subtract the snapshot.

    ``unit="samples"``: :meth:`sample` is one step plus its sample. ``unit="ticks"``: clock starts
    at tick 0; :meth:`tick` performs one step, :meth:`add` adds a sample at the current tick.

    Examples
    --------
    >>> ref = EagerProportional(window=4, depth=1, width=2)
    >>> for c in [0, 0, 0, 0, 1, 1]:
    ...     ref.sample([c])
    >>> ref.counts.tolist()
    [[2.0, 2.0]]
    """

    def __init__(self, window: int, depth: int, width: int, unit: str = "samples") -> None:
        self.window = window
        self.counts = np.zeros((depth, width))
        self.snapshot = np.zeros((depth, width))
        self.now = -1 if unit == "samples" else 0

    def tick(self) -> None:
        """One step (the ``m'`` part of the listing, without a sample)."""
        self.now += 1
        if self.now % self.window == 0:
            self.snapshot = self.counts / self.window
        self.counts = self.counts - self.snapshot


class EagerSimple(_EagerSteps):
    """Listing 3.2: reset at ``m' = 0``, then add.

    Examples
    --------
    >>> ref = EagerSimple(window=2, depth=1, width=2)
    >>> for c in [0, 0, 1]:
    ...     ref.sample([c])
    >>> ref.counts.tolist()
    [[0, 1]]
    """

    def __init__(self, window: int, depth: int, width: int, unit: str = "samples") -> None:
        self.window = window
        self.counts = np.zeros((depth, width), dtype=np.int64)
        self.now = -1 if unit == "samples" else 0

    def tick(self) -> None:
        """One step."""
        self.now += 1
        if self.now % self.window == 0:
            self.counts[:] = 0


class EagerPerfect(_EagerSteps):
    """Listing 3.1: a queue of ``(tick, cols)``; expired samples are removed one by one.

    Examples
    --------
    >>> ref = EagerPerfect(window=2, depth=1, width=2)
    >>> for c in [0, 0, 1]:
    ...     ref.sample([c])
    >>> ref.counts.tolist()
    [[1, 1]]
    """

    def __init__(self, window: int, depth: int, width: int, unit: str = "samples") -> None:
        self.window = window
        self.counts = np.zeros((depth, width), dtype=np.int64)
        self.queue: deque = deque()
        self.now = -1 if unit == "samples" else 0

    def tick(self) -> None:
        """One step: dequeue what leaves the window."""
        self.now += 1
        while self.queue and self.queue[0][0] <= self.now - self.window:
            _, cols = self.queue.popleft()
            for i, c in enumerate(cols):
                self.counts[i, int(c)] -= 1

    def add(self, cols: Sequence[int]) -> None:
        """Enqueue a sample at the current step."""
        self.queue.append((self.now, list(cols)))
        super().add(cols)
