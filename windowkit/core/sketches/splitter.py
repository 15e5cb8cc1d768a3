"""SPLITTER windowed Count-Min (Listings 3.4 and 3.5).

The listings are read with these corrections of the paper's text: Listing 3.4 line 23 reads
"if no last sub-cell exists" (the text says one exists); line 36 adds the two sub-cells'
*counters*; Listing 3.5 line 3 reads ``freq_last = last_counter / (last_last - last_init + 1)``
(the text divides by ``last_init - last_init + 1``). A sub-cell that starts expiring decays at
the constant rate ``counter / (last - init + 1)`` per step until it is gone, so its decay is
computed in closed form when the cell is next read instead of on every sample. Estimates are
rounded and never negative.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from windowkit.core.registry import register
from windowkit.core.sketches import _hashing
from windowkit.core.sketches import _splitter_kernel as kern
from windowkit.core.sketches._hashing import HashFamily
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


@register()
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
    hashing : {"multiply-shift", "spark"}
        The hash family (:class:`~windowkit.core.sketches.count_min.CountMinConfig`).
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
        hashing: HashFamily = "multiply-shift",
    ) -> None:
        super().__init__(window, depth=depth, width=width, seed=seed, unit=unit, hashing=hashing,
                         tau=tau, mu=mu)

    tau = property(lambda self: self.config.tau, doc="Minimal relative sub-cell size.")
    mu = property(lambda self: self.config.mu, doc="Merge threshold of ERROR.")

    def _init_state(self, capacity: int = 64) -> None:
        n_cells = self.config.depth * self.config.width
        self._cells = np.full((n_cells, 5), -1, dtype=np.int64)  # head, tail, pred, size, base
        self._cells[:, 3:] = 0
        self._p_init = np.zeros(capacity, dtype=np.int64)
        self._p_last = np.zeros(capacity, dtype=np.int64)
        self._p_cnt = np.zeros(capacity, dtype=np.float64)
        self._nxt = np.full(capacity, -1, dtype=np.int64)
        self._free = np.zeros(capacity, dtype=np.int64)
        self._meta = np.zeros(4, dtype=np.int64)  # splits, merges, n_free, used

    def _pool(self) -> tuple[np.ndarray, ...]:
        return (self._cells, self._p_init, self._p_last, self._p_cnt, self._nxt, self._free,
                self._meta)

    @property
    def total_splits(self) -> int:
        """Number of splits performed so far (Listing 3.4 line 41)."""
        return int(self._meta[kern.SPLITS])

    @property
    def total_merges(self) -> int:
        """Number of merges performed so far (Listing 3.4 line 35)."""
        return int(self._meta[kern.MERGES])

    def n_subcells(self) -> int:
        """Live sub-cells in the whole matrix at step :attr:`now`."""
        self._expire_all()
        return int(self._cells[:, 3].sum())

    def n_splits(self) -> int:
        """The paper's number of splits ``s``: live sub-cells beyond one per non-empty cell."""
        self._expire_all()
        size = self._cells[:, 3]
        return int(size.sum() - np.count_nonzero(size))

    def _expire_all(self) -> None:
        kern.expire_all(self.now, self.config.window, self._cells, self._p_init, self._p_last,
                        self._nxt, self._free, self._meta)

    def _grow(self) -> None:
        cap = self._p_init.size
        for name in ("_p_init", "_p_last", "_p_cnt", "_nxt", "_free"):
            old = getattr(self, name)
            new = np.full(2 * cap, -1 if name == "_nxt" else 0, dtype=old.dtype)
            new[:cap] = old
            setattr(self, name, new)

    def _ingest(self, keys: np.ndarray, mix: bool, ticks: np.ndarray | None, first: int) -> None:
        cfg = self.config
        t = tick_array(ticks, first, keys.size, cfg.unit)
        smix, coeffs, spark = _hashing.kernel_args(cfg)
        start = 0
        while start < keys.size:
            start = kern.ingest_kernel(
                keys, mix, smix, coeffs, spark, cfg.width, t, start, cfg.window, cfg.threshold,
                cfg.mu, self._cells, self._p_init, self._p_last, self._p_cnt, self._nxt,
                self._free, self._meta,
            )
            if start < keys.size:
                self._grow()

    def _advance_to(self, tick: int) -> None:
        """Nothing to do: expiry is lazy."""

    def _cell_values(self, cells: np.ndarray) -> np.ndarray:
        return kern.values_kernel(
            np.ascontiguousarray(cells, dtype=np.int64), self.now, self.config.window,
            self._cells, self._p_init, self._p_last, self._p_cnt, self._nxt, self._free,
            self._meta,
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
        size = self._cells[:, 3]
        order = np.zeros(int(size.sum()), dtype=np.int64)
        k = 0
        for cell in np.flatnonzero(size):
            rec = self._cells[cell, 0]
            for _ in range(size[cell]):
                order[k] = rec
                rec = self._nxt[rec]
                k += 1
        return {
            "size": size.copy(),
            "base": np.where(size > 0, self._cells[:, 4], 0),
            "init": self._p_init[order],
            "last": self._p_last[order],
            "cnt": self._p_cnt[order],
            "counters": self._meta[:2].copy(),
        }

    def _load_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        n_cells = self.config.depth * self.config.width
        size = arrays["size"].astype(np.int64)
        total = int(size.sum())
        if size.shape != (n_cells,) or size.min(initial=0) < 0:
            msg = "array 'size' does not match the matrix"
            raise ValueError(msg)
        if any(arrays[k].shape != (total,) for k in ("init", "last", "cnt")):
            msg = "sub-cell arrays do not match 'size'"
            raise ValueError(msg)
        _check_sub_cells(size, arrays, self.now)
        self._init_state(max(64, 2 * total))
        self._p_init[:total] = arrays["init"]
        self._p_last[:total] = arrays["last"]
        self._p_cnt[:total] = arrays["cnt"]
        ends = np.cumsum(size)
        starts = ends - size
        nxt = np.arange(1, total + 1, dtype=np.int64)
        nxt[ends[size > 0] - 1] = -1
        self._nxt[:total] = nxt
        live = size > 0
        self._cells[:, 3] = size
        self._cells[:, 4] = arrays["base"].astype(np.int64).reshape(n_cells)
        self._cells[live, 0] = starts[live]
        self._cells[live, 1] = ends[live] - 1
        two = size >= 2
        self._cells[two, 2] = ends[two] - 2
        self._meta[:2] = arrays["counters"].astype(np.int64).reshape(2)
        self._meta[kern.USED] = total

    def memory_bytes(self) -> int:
        """Bytes of the per-cell bookkeeping and of the sub-cells in use (pool high-water)."""
        used = int(self._meta[kern.USED])
        return int(self._cells.nbytes + used * (8 + 8 + 8 + 8))


def _check_sub_cells(size: np.ndarray, arrays: dict[str, np.ndarray], now: int) -> None:
    """Refuse sub-cells the kernel cannot take: each spans ``init <= last <= now`` with a
    positive, finite counter, a cell's sub-cells follow one another in time (one may begin
    in the step where the one before it ends), and counters and
    the cells' last steps are not negative or in the future (a sub-cell ending before it
    starts divides by a zero span)."""
    init, last = arrays["init"].astype(np.int64), arrays["last"].astype(np.int64)
    cnt = arrays["cnt"].astype(np.float64)
    same_cell = np.repeat(np.arange(len(size)), size)
    follows = same_cell[1:] == same_cell[:-1]
    base = arrays["base"].astype(np.int64).ravel()
    if ((init > last).any() or (last > now).any() or not np.isfinite(cnt).all()
            or (cnt <= 0).any() or (last[:-1][follows] > init[1:][follows]).any()
            or (base[size > 0] > now).any() or (arrays["counters"] < 0).any()):
        msg = "SPLITTER sub-cells are inconsistent (times out of order or bad counters)"
        raise ValueError(msg)
