"""Eager SPLITTER: a line-by-line transcription of Listings 3.4 and 3.5, with the errata of
:mod:`windowkit.core.sketches.splitter`.

Every step visits every cell (O(depth x width) per step), exactly as the paper writes it. It
works on columns (the hash of each item in each row), so it does not depend on any hash family.
Used as the oracle of :class:`windowkit.core.sketches.SplitterWindowCM`.

Errata applied: line 23 reads "if no last sub-cell exists"; line 36 adds the two sub-cells'
counters; Listing 3.5 line 3 is ``freq_last = last_counter / (last_last - last_init + 1)``.
Readings: line 11 is ``first_init <= m' - N`` (identical to ``=`` for count-based windows);
ERROR is infinite when ``last_init - pred_init <= 0``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


class EagerSplitter:
    """SPLITTER with per-step, per-cell expiry, straight from Listing 3.4.

    Parameters
    ----------
    window : int
        ``N`` steps.
    depth, width : int
        ``c1`` rows and ``c2`` columns.
    tau, mu : float
        SPLITTER's parameters.
    unit : {"samples", "ticks"}
        ``"samples"``: :meth:`sample` performs one step then adds the sample. ``"ticks"``: the
        clock starts at tick 0, :meth:`tick` performs a step, :meth:`add` adds a sample now.

    Examples
    --------
    >>> ref = EagerSplitter(window=10, depth=1, width=2, tau=0.5, mu=1.5)
    >>> for _ in range(12):
    ...     ref.sample([0])
    >>> round(ref.estimate([0]))
    10
    """

    def __init__(
        self, window: int, depth: int, width: int, tau: float, mu: float, unit: str = "samples"
    ) -> None:
        self.window = window
        self.depth = depth
        self.width = width
        self.threshold = tau * window / width
        self.mu = mu
        self.unit = unit
        self.now = -1 if unit == "samples" else 0
        # count[i1][i2] = [queue of sub-cells [init, last, counter], v]
        self.queues: list[list[list[list[float]]]] = [
            [[] for _ in range(width)] for _ in range(depth)
        ]
        self.v = [[0.0] * width for _ in range(depth)]
        self.splits = 0

    def tick(self) -> None:
        """One step of expiry over every cell (Listing 3.4 lines 8-19), then ``m' += 1``."""
        self.now += 1
        m = self.now
        for i1 in range(self.depth):
            for i2 in range(self.width):
                queue = self.queues[i1][i2]
                if queue and queue[0][0] <= m - self.window:
                    first = queue[0]
                    rate = first[2] / (first[1] - first[0] + 1)
                    self.v[i1][i2] -= rate
                    first[2] -= rate
                    first[0] += 1
                    if first[0] > first[1]:
                        queue.pop(0)

    def add(self, columns: Sequence[int]) -> None:
        """Handle one sample at the current step (lines 20-48); ``columns[i]`` is ``h_i(j)``."""
        m = self.now
        for i1 in range(self.depth):
            i2 = int(columns[i1])
            queue = self.queues[i1][i2]
            self.v[i1][i2] += 1
            if not queue:  # line 23 (erratum: no last sub-cell)
                queue.append([m, m, 1.0])
                continue
            last = queue[-1]
            # line 29; and with ticks a sub-cell spans at least one tick: a sample in the tick
            # its last sub-cell began joins it (see windowkit.core.sketches.splitter)
            if last[2] < self.threshold or last[0] == m:
                last[1] = m
                last[2] += 1
                continue
            if len(queue) >= 2 and error(queue[-2], last) <= self.mu:  # line 34
                pred = queue[-2]
                pred[1] = last[1]
                pred[2] = pred[2] + last[2]  # line 36 (erratum: counters)
                last[0] = m
                last[1] = m
                last[2] = 1.0
                continue
            queue.append([m, m, 1.0])  # lines 41-45: split
            self.splits += 1

    def sample(self, columns: Sequence[int]) -> None:
        """A count-based step: expiry then the sample (one call per sample)."""
        self.tick()
        self.add(columns)

    def values(self) -> list[list[float]]:
        """The cell counters ``v``."""
        return [row[:] for row in self.v]

    def estimate(self, columns: Sequence[int]) -> float:
        """Unrounded ``min_i v[i][h_i(j)]`` (GETFREQ before rounding)."""
        return min(self.v[i][int(columns[i])] for i in range(self.depth))

    def n_subcells(self) -> int:
        """Live sub-cells."""
        return sum(len(q) for row in self.queues for q in row)


def error(pred: Sequence[float], last: Sequence[float]) -> float:
    """Listing 3.5 with the erratum ``freq_last = last_counter / (last_last - last_init + 1)``.

    Examples
    --------
    >>> error([0, 9, 10.0], [10, 14, 10.0])
    2.0
    """
    span_pred = last[0] - pred[0]
    if span_pred <= 0 or pred[2] <= 0:
        return math.inf
    freq_pred = pred[2] / span_pred
    freq_last = last[2] / (last[1] - last[0] + 1)
    return freq_last / freq_pred if freq_last > freq_pred else freq_pred / freq_last
