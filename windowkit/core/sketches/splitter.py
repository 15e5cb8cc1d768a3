"""SPLITTER windowed Count-Min (Listings 3.4 and 3.5, with the errata of DESIGN.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from windowkit.core.sketches import _hashing
from windowkit.core.sketches import _splitter_kernel as kern
from windowkit.core.sketches._window import WindowConfig, WindowedCountMin, tick_array
from windowkit.core.validation import check_in_range


@dataclass(frozen=True)
class SplitterConfig(WindowConfig):
    """:class:`~windowkit.core.sketches._window.WindowConfig` plus SPLITTER's ``tau`` and ``mu``.

    Parameters
    ----------
    tau : float
        In (0, 1]: a sub-cell takes part in split/merge decisions once its counter reaches
        ``tau * N / width``.
    mu : float
        Positive: the largest ERROR (ratio of update rates, >= 1) at which the newest sub-cell is
        merged into its predecessor instead of splitting the cell.

    Examples
    --------
    >>> SplitterConfig(window=100, depth=1, width=28, tau=0.05, mu=1.5).threshold
    0.17857142857142858
    """

    tau: float = 0.05
    mu: float = 1.5

    def __post_init__(self) -> None:
        super().__post_init__()
        check_in_range("tau", self.tau, 0, 1, low_open=True)
        check_in_range("mu", self.mu, 0, float("inf"), low_open=True, high_open=True)

    @property
    def threshold(self) -> float:
        """``tau * N / c2``, the minimal sub-cell counter before it is evaluated (line 29)."""
        return self.tau * self.window / self.width


class SplitterWindowCM(WindowedCountMin):
    """Count-Min whose cells keep a queue of sub-cells tracking changes of their update rate.

    Each cell holds sub-cells ``(init, last, counter)``. A sample increments the newest sub-cell
    until its counter reaches ``tau * N / width``; then the ERROR (ratio of the update rates of
    the newest sub-cell and its predecessor, Listing 3.5) decides: at most ``mu`` merges the two,
    otherwise a new sub-cell is opened (a *split*). The oldest sub-cell starts expiring ``N``
    steps after its ``init`` and decays at its constant rate ``counter / (last - init + 1)``
    until gone. Expiry is applied lazily in closed form when a cell is touched or queried, so an
    update costs O(depth) instead of the paper's O(depth x width); it equals the eager
    transcription in :mod:`windowkit.reference.splitter` (tested with hypothesis).

    Choices where the listing is ambiguous (they coincide with the listing for count-based
    windows): the head expires from step ``max(init + N, step it became head)`` (the listing's
    ``first_init = m' - N``, read as ``<=`` so that a head created behind schedule by a same-tick
    merge of a time-based window still expires); ERROR is infinite (split) if the predecessor's
    span ``last_init - pred_init`` is empty. Not a linear sketch: :meth:`merge` is refused; merge
    :meth:`to_count_min` snapshots instead (DistCM).

    Parameters
    ----------
    window : int
        ``N`` steps (samples, or ticks with ``unit="ticks"``).
    depth, width, seed : int
        Count matrix shape and hash seed.
    unit : {"samples", "ticks"}
        Count-based or time-based window.
    tau, mu : float
        See :class:`SplitterConfig` (paper defaults 0.05 and 1.5).

    Examples
    --------
    >>> s = SplitterWindowCM(100, depth=1, width=16, tau=0.05, mu=1.5)
    >>> s.update([1] * 150 + [2] * 50)
    >>> s.estimate([1, 2]).tolist()
    [50, 50]
    >>> s.n_subcells() >= 1
    True
    """

    FORMAT_TAG = "CMSPLITR"
    CONFIG_CLS = SplitterConfig

    def __init__(
        self,
        window: int,
        *,
        depth: int,
        width: int,
        seed: int = 0,
        unit: str = "samples",
        tau: float = 0.05,
        mu: float = 1.5,
    ) -> None:
        super().__init__(window, depth=depth, width=width, seed=seed, unit=unit, tau=tau, mu=mu)

    tau = property(lambda self: self.config.tau, doc="Minimal relative sub-cell size.")
    mu = property(lambda self: self.config.mu, doc="Merge threshold of ERROR.")

    def _init_state(self, capacity: int = 4) -> None:
        cells = self.config.depth * self.config.width
        self._q_init = np.zeros((cells, capacity), dtype=np.int64)
        self._q_last = np.zeros((cells, capacity), dtype=np.int64)
        self._q_cnt = np.zeros((cells, capacity), dtype=np.float64)
        self._head = np.zeros(cells, dtype=np.int64)
        self._size = np.zeros(cells, dtype=np.int64)
        self._base = np.zeros(cells, dtype=np.int64)
        self._counters = np.zeros(2, dtype=np.int64)

    @property
    def total_splits(self) -> int:
        """Number of splits performed so far (Listing 3.4 line 41)."""
        return int(self._counters[0])

    @property
    def total_merges(self) -> int:
        """Number of merges performed so far (Listing 3.4 line 35)."""
        return int(self._counters[1])

    def n_subcells(self) -> int:
        """Live sub-cells in the whole matrix at step :attr:`now`."""
        self._expire_all()
        return int(self._size.sum())

    def n_splits(self) -> int:
        """The paper's number of splits ``s``: live sub-cells beyond one per non-empty cell."""
        self._expire_all()
        return int(self._size.sum() - np.count_nonzero(self._size))

    def _expire_all(self) -> None:
        n = self.config.window
        kern.expire_all(self.now, n, self._q_init, self._q_last, self._head, self._size, self._base)

    def _grow(self) -> None:
        cells, cap = self._q_init.shape
        idx = (self._head[:, None] + np.arange(cap)[None, :]) % cap
        rows = np.arange(cells)[:, None]
        new_cap = 2 * cap
        for name in ("_q_init", "_q_last", "_q_cnt"):
            old = getattr(self, name)
            new = np.zeros((cells, new_cap), dtype=old.dtype)
            new[:, :cap] = old[rows, idx]
            setattr(self, name, new)
        self._head[:] = 0

    def _ingest(self, keys: np.ndarray, mix: bool, ticks: np.ndarray | None, first: int) -> None:
        cfg = self.config
        t = tick_array(ticks, first, keys.size, cfg.unit)
        coeffs = _hashing.row_coefficients(cfg.seed, cfg.depth)
        smix = _hashing.seed_mix(cfg.seed)
        start = 0
        while start < keys.size:
            start = kern.ingest_kernel(
                keys, mix, smix, coeffs, cfg.width, t, start, cfg.window, cfg.threshold,
                cfg.mu, self._q_init, self._q_last, self._q_cnt, self._head, self._size,
                self._base, self._counters,
            )
            if start < keys.size:
                self._grow()

    def _advance_to(self, tick: int) -> None:
        """Nothing to do: expiry is lazy."""

    def _cell_values(self, cells: np.ndarray) -> np.ndarray:
        return kern.values_kernel(
            np.ascontiguousarray(cells, dtype=np.int64), self.now, self.config.window,
            self._q_init, self._q_last, self._q_cnt, self._head, self._size, self._base,
        )

    def values(self) -> np.ndarray:
        """Current cell values ``v`` (float), shape ``(depth, width)``."""
        cfg = self.config
        vals = self._cell_values(np.arange(cfg.depth * cfg.width))
        return vals.reshape(cfg.depth, cfg.width)

    def _values_at(self, cols: np.ndarray) -> np.ndarray:
        cfg = self.config
        out = np.zeros((cfg.depth, cfg.width))
        cells = np.unique((np.arange(cfg.depth)[:, None] * cfg.width + cols).ravel())
        out.reshape(-1)[cells] = self._cell_values(cells)
        return out

    def merge(self, other: WindowedCountMin) -> None:
        """Refused: SPLITTER is not a linear sketch; merge :meth:`to_count_min` snapshots."""
        msg = (
            "cannot merge `other`: SplitterWindowCM is not a linear sketch; merge the "
            "count matrices from to_count_min() instead"
        )
        raise ValueError(msg)

    # canonical state: each cell's queue unrolled, oldest first
    def _state_arrays(self) -> dict[str, np.ndarray]:
        self._expire_all()
        cells, cap = self._q_init.shape
        idx = (self._head[:, None] + np.arange(cap)[None, :]) % cap
        keep = np.arange(cap)[None, :] < self._size[:, None]
        rows = np.broadcast_to(np.arange(cells)[:, None], idx.shape)
        sel = (rows[keep], idx[keep])
        return {
            "size": self._size.copy(),
            "base": np.where(self._size > 0, self._base, 0),
            "init": self._q_init[sel],
            "last": self._q_last[sel],
            "cnt": self._q_cnt[sel],
            "counters": self._counters.copy(),
        }

    def _load_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        cells = self.config.depth * self.config.width
        size = arrays["size"].astype(np.int64)
        total = int(size.sum())
        if size.shape != (cells,) or size.min(initial=0) < 0:
            msg = "array 'size' does not match the matrix"
            raise ValueError(msg)
        if any(arrays[k].shape != (total,) for k in ("init", "last", "cnt")):
            msg = "sub-cell arrays do not match 'size'"
            raise ValueError(msg)
        cap = max(4, int(size.max(initial=0)))
        self._init_state(cap)
        pos = np.arange(cap)[None, :] < size[:, None]
        self._q_init[pos] = arrays["init"]
        self._q_last[pos] = arrays["last"]
        self._q_cnt[pos] = arrays["cnt"]
        self._size = size
        self._base = arrays["base"].astype(np.int64).reshape(cells)
        self._counters = arrays["counters"].astype(np.int64).reshape(2)

    def memory_bytes(self) -> int:
        """Bytes allocated for the sub-cell rings and per-cell bookkeeping."""
        arrays = (self._q_init, self._q_last, self._q_cnt, self._head, self._size, self._base)
        return int(sum(a.nbytes for a in arrays))
