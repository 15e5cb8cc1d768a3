"""PROPORTIONAL windowed Count-Min (Listing 3.3): subtract the previous window's average rate."""

from __future__ import annotations

import numpy as np

from windowkit.core.registry import register
from windowkit.core.sketches._blocks import BlockCountMin


@register()
class ProportionalWindowCM(BlockCountMin):
    """Count-Min that removes ``snapshot = count / N`` on every step of the next window.

    At each window start (steps ``0, N, 2N, ...``) the matrix divided by ``N`` becomes the
    snapshot, subtracted from the matrix on every step of that window. Updates are applied per
    batch in closed form (see :mod:`windowkit.core.sketches._blocks`): the cell value at step
    ``now`` is ``prev * (N - j) / N + cur``, never negative. Estimates are rounded (Listing 3.3
    line 23).

    Parameters
    ----------
    window : int
        ``N`` steps (samples, or ticks with ``unit="ticks"``).
    depth, width, seed : int
        Count matrix shape and hash seed.
    unit : {"samples", "ticks"}
        Count-based or time-based window.
    hashing : {"multiply-shift", "spark"}
        The hash family (:class:`~windowkit.core.sketches.count_min.CountMinConfig`).

    Examples
    --------
    >>> s = ProportionalWindowCM(4, depth=1, width=32)
    >>> s.update([5, 5, 5, 5, 6, 6])
    >>> s.estimate([5, 6]).tolist()
    [2, 2]
    """

    FORMAT_TAG = "CMPROPOR"

    def values(self) -> np.ndarray:
        """Current (float) cell values ``prev * (N - j) / N + cur``."""
        n = self.config.window
        j = self.steps_into_block
        return self.prev * ((n - j) / n) + self.cur

    def snapshot(self) -> np.ndarray:
        """The snapshot subtracted on each step of the current window (``prev / N``)."""
        return self.prev / self.config.window
