"""Shared state of SIMPLE and PROPORTIONAL: the counts of the current and previous window block.

Steps are cut into *blocks* ``[b N, (b + 1) N)`` (the paper's ``m' = 0`` points). SIMPLE resets its
matrix at each block start, so its matrix is the current block's counts. PROPORTIONAL takes the
snapshot ``count / N`` at each block start and subtracts it on every step of the block; since its
matrix at the end of a block equals exactly that block's counts, its matrix at step ``now`` is,
in closed form,

    count = prev * (N - j) / N + cur,        j = now - b N + 1 steps of block b performed,

with ``prev`` and ``cur`` the integer counts of blocks ``b - 1`` and ``b``. Keeping the integers
and ``j`` applies "subtract the snapshot" for a whole batch at once (``k`` steps subtract
``k * snapshot``), split exactly at block boundaries, and makes the state independent of how the
stream is cut into batches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from windowkit.core.sketches import _hashing
from windowkit.core.sketches._window import WindowedCountMin, first_at_or_after
from windowkit.core.validation import check_int


class BlockCountMin(WindowedCountMin):
    """Integer counts of the current block (``cur``) and of the previous one (``prev``)."""

    _KEEP_PREV = True

    def _init_state(self) -> None:
        cfg = self.config
        self.cur = np.zeros((cfg.depth, cfg.width), dtype=np.int64)
        self.prev = np.zeros((cfg.depth, cfg.width), dtype=np.int64)

    @property
    def block(self) -> int:
        """Index ``b`` of the block holding step :attr:`now`."""
        return self.now // self.config.window

    @property
    def steps_into_block(self) -> int:
        """Steps ``j`` of the current block performed so far (1..N)."""
        return self.now - self.block * self.config.window + 1

    def _roll_to(self, block: int) -> None:
        """Make ``block`` the current one (its counts start at zero)."""
        gap = block - self.block
        if gap == 1 and self._KEEP_PREV:
            self.prev, self.cur = self.cur, self.prev
            self.cur[:] = 0
        elif gap >= 1:
            self.prev[:] = 0
            self.cur[:] = 0

    def _ingest(self, keys: np.ndarray, mix: bool, ticks: np.ndarray | None, first: int) -> None:
        k = keys.size
        unit = self.config.unit
        n = self.config.window
        if ticks is not None:
            last = int(ticks[-1])
        else:
            last = first + k - 1 if unit == "samples" else first
        new_block = last // n
        start_cur = first_at_or_after(ticks, first, k, unit, new_block * n)
        cfg = self.config
        if new_block > self.block:
            if self._KEEP_PREV:
                start_prev = first_at_or_after(ticks, first, k, unit, (new_block - 1) * n)
                if new_block - 1 == self.block:
                    _hashing.add(keys[start_prev:start_cur], mix, cfg, self.cur, 1)
                    self._roll_to(new_block)
                else:
                    self._roll_to(new_block)
                    _hashing.add(keys[start_prev:start_cur], mix, cfg, self.prev, 1)
            else:
                self._roll_to(new_block)
        _hashing.add(keys[start_cur:], mix, cfg, self.cur, 1)

    def _advance_to(self, tick: int) -> None:
        self._roll_to(tick // self.config.window)

    def load_blocks(self, now: int, blocks: Mapping[int, np.ndarray], n_samples: int) -> None:
        """Put this empty sketch at step ``now`` with the count matrices of whole blocks.

        ``blocks[b]`` is the Count-Min matrix of the samples of block ``b`` (steps
        ``[b N, (b + 1) N)``, none after ``now``), hashed with this sketch's configuration (e.g.
        built elsewhere with the ``"spark"`` family: Spark's ``count_min_sketch`` per block). The
        state is the one updating those samples in step order and moving the clock to ``now``
        gives: only the block of ``now`` and the one before count, other blocks are ignored.

        Parameters
        ----------
        now : int
            The clock's step.
        blocks : mapping of int to ndarray
            Integer ``(depth, width)`` matrices by block index.
        n_samples : int
            Samples seen, in all blocks.

        Examples
        --------
        >>> import numpy as np
        >>> from windowkit.core.sketches import CountMin, ProportionalWindowCM
        >>> block = CountMin(1, 8)
        >>> block.update([5, 5])
        >>> s = ProportionalWindowCM(4, depth=1, width=8, unit="ticks")
        >>> s.load_blocks(5, {0: block.counts}, n_samples=2)
        >>> s.estimate([5]).tolist()  # 2 samples of block 0, 2 of its 4 steps still in the window
        [1]
        """
        if not self.is_empty() or self.now > (0 if self.config.unit == "ticks" else -1):
            msg = "`load_blocks` needs a sketch that has seen nothing"
            raise ValueError(msg)
        check_int("n_samples", n_samples, 0)
        if now < self.now:  # as update() refuses ticks before the clock's start
            msg = f"`now` must be at least now={self.now}; got {now}"
            raise ValueError(msg)
        block = now // self.config.window
        for b, counts in blocks.items():
            if b > block:
                msg = f"`blocks` holds block {b}, after the block {block} of now={now}"
                raise ValueError(msg)
            if b == block or (b == block - 1 and self._KEEP_PREV):
                counts = np.asarray(counts)
                if counts.dtype.kind not in "iu":
                    msg = f"block {b}'s counts must be integers; got {counts.dtype}"
                    raise ValueError(msg)
                target = self.cur if b == block else self.prev
                target[:] = self._check_matrix(counts, f"blocks[{b}]")
        self.now = int(now)
        self.n_samples = int(n_samples)

    def _merge_state(self, other: Any) -> None:
        self.cur += other.cur
        self.prev += other.prev

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {"cur": self.cur, "prev": self.prev}

    def _load_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.cur = self._check_matrix(arrays["cur"].astype(np.int64), "cur")
        self.prev = self._check_matrix(arrays["prev"].astype(np.int64), "prev")
