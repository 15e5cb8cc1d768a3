"""PERFECT windowed Count-Min (Listing 3.1): keeps the window's samples to expire them exactly."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from windowkit.core.registry import register
from windowkit.core.sketches import _hashing
from windowkit.core.sketches._window import WindowedCountMin, tick_array


@numba.njit(cache=True)
def _mix_keys(keys, smix):
    out = np.empty_like(keys)
    for i in range(keys.size):
        out[i] = _hashing._mix(keys[i] ^ smix)
    return out


@register()
class PerfectWindowCM(WindowedCountMin):
    """Count-Min over exactly the last ``N`` steps, storing the window's samples (O(N) space).

    Guarantee (Theorem 1): the count matrix equals that of a vanilla Count-Min fed with the
    window's samples, so ``f_j <= estimate(j) <= f_j + epsilon * (W - f_j)`` with probability at
    least ``1 - delta``, where ``W`` is the number of samples in the window.

    Parameters
    ----------
    window : int
        ``N`` steps (samples, or ticks with ``unit="ticks"``).
    depth, width, seed : int
        Count matrix shape and hash seed.
    unit : {"samples", "ticks"}
        Count-based or time-based window (see :mod:`windowkit.core.sketches._window`).
    hashing : {"multiply-shift", "spark"}
        The hash family (:class:`~windowkit.core.sketches.count_min.CountMinConfig`).

    Examples
    --------
    >>> s = PerfectWindowCM(3, depth=2, width=16)
    >>> s.update(["a", "a", "b", "c", "a"])
    >>> s.estimate(["a", "b", "z"]).tolist()
    [1, 1, 0]
    """

    FORMAT_TAG = "CMPERFCT"

    def _init_state(self) -> None:
        cfg = self.config
        self.counts = np.zeros((cfg.depth, cfg.width), dtype=np.int64)
        self._keys = np.zeros(16, dtype=np.uint64)
        self._ticks = np.zeros(16, dtype=np.int64)
        self._start = 0
        self._end = 0

    @property
    def queue_length(self) -> int:
        """Number of samples held (the window's content)."""
        return self._end - self._start

    def values(self) -> np.ndarray:
        """Current count matrix (int64)."""
        return self.counts

    def _final_keys(self, keys: np.ndarray, mix: bool) -> np.ndarray:
        return _mix_keys(keys, _hashing.seed_mix(self.config.seed)) if mix else keys

    def _expire(self, cutoff: int) -> None:
        """Drop queued samples with tick ``<= cutoff``."""
        ticks = self._ticks[self._start : self._end]
        n_old = int(np.searchsorted(ticks, cutoff, side="right"))
        if n_old:
            old = self._keys[self._start : self._start + n_old]
            _hashing.add(old, False, self.config, self.counts, -1)
            self._start += n_old

    def _append(self, keys: np.ndarray, ticks: np.ndarray) -> None:
        k = keys.size
        size = self._end - self._start
        if self._end + k > self._keys.size:
            cap = max(16, 2 * (size + k))
            new_keys = np.zeros(cap, dtype=np.uint64)
            new_ticks = np.zeros(cap, dtype=np.int64)
            new_keys[:size] = self._keys[self._start : self._end]
            new_ticks[:size] = self._ticks[self._start : self._end]
            self._keys, self._ticks, self._start, self._end = new_keys, new_ticks, 0, size
        self._keys[self._end : self._end + k] = keys
        self._ticks[self._end : self._end + k] = ticks
        self._end += k

    def _ingest(self, keys: np.ndarray, mix: bool, ticks: np.ndarray | None, first: int) -> None:
        k = keys.size
        t = tick_array(ticks, first, k, self.config.unit)
        cutoff = int(t[-1]) - self.config.window
        alive = int(np.searchsorted(t, cutoff, side="right"))
        fkeys = self._final_keys(keys[alive:], mix)
        _hashing.add(fkeys, False, self.config, self.counts, 1)
        self._expire(cutoff)
        self._append(fkeys, t[alive:])

    def _advance_to(self, tick: int) -> None:
        self._expire(tick - self.config.window)

    def _merge_state(self, other: Any) -> None:
        self.counts += other.counts
        keys = np.concatenate([self._keys[self._start : self._end],
                               other._keys[other._start : other._end]])
        ticks = np.concatenate([self._ticks[self._start : self._end],
                                other._ticks[other._start : other._end]])
        order = np.argsort(ticks, kind="stable")
        self._start = self._end = 0
        self._append(keys[order], ticks[order])

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {
            "counts": self.counts,
            "keys": self._keys[self._start : self._end],
            "ticks": self._ticks[self._start : self._end],
        }

    def _load_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.counts = self._check_matrix(arrays["counts"].astype(np.int64), "counts")
        keys = arrays["keys"].astype(np.uint64)
        ticks = arrays["ticks"].astype(np.int64)
        if keys.shape != ticks.shape:
            msg = "arrays 'keys' and 'ticks' differ in length"
            raise ValueError(msg)
        self._append(keys, ticks)

    def memory_bytes(self) -> int:
        """Bytes of the count matrix and of the sample queue (allocated capacity)."""
        return int(self.counts.nbytes + self._keys.nbytes + self._ticks.nbytes)
