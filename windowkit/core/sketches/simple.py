"""SIMPLE windowed Count-Min (Listing 3.2): a vanilla sketch reset at the start of every window."""

from __future__ import annotations

import numpy as np

from windowkit.core.registry import register
from windowkit.core.sketches._blocks import BlockCountMin


@register()
class SimpleWindowCM(BlockCountMin):
    """Count-Min whose matrix is reset every ``N`` steps (at steps ``0, N, 2N, ...``).

    The estimate covers the samples since the last reset only (between 1 and ``N`` steps), so it
    never overestimates by more than the vanilla bound on those samples but may miss most of the
    window. Optimal space: one ``depth x width`` matrix (the ``prev`` array kept by the shared
    base class stays zero).

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
    >>> s = SimpleWindowCM(4, depth=1, width=32)
    >>> s.update([5, 5, 5, 5, 5, 6])
    >>> s.estimate([5, 6]).tolist()
    [1, 1]
    """

    FORMAT_TAG = "CMSIMPLE"
    _KEEP_PREV = False

    def values(self) -> np.ndarray:
        """Current count matrix (int64): the counts since the last reset."""
        return self.cur

    def memory_bytes(self) -> int:
        """Bytes of the count matrix."""
        return int(self.cur.nbytes)
