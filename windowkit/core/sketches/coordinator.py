"""The DistCM coordinator as a stream operator: the heavy hitters of every coordinator state.

In the distributed Count-Min of Rivetti, Busnel and Mostefaoui (Section 3.5, "DistCM"), each
site sends snapshots of its window's count matrix and the coordinator's view is the sum of the
latest matrix of every site. :class:`HeavyHittersOperator` replays the snapshots in order of
``time`` (then ``shard``, ``seq``): after each one, the view's window count ``W`` is the mean
row sum of the summed matrix, and every candidate whose estimate reaches ``phi * W`` (and is
positive) is a heavy hitter of that view.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from windowkit.core.operator import StreamOperator
from windowkit.core.registry import register
from windowkit.core.serialization import pack_state, state_decoder, unpack_state
from windowkit.core.sketches.count_min import CountMin, estimate_counts
from windowkit.core.validation import check_in_range

#: The output column holding a heavy hitter: its place in the operator's candidates.
CANDIDATE = "candidate"


@register()
class HeavyHittersOperator(StreamOperator):
    """The DistCM coordinator over a stream of snapshots: the candidates whose estimated
    window frequency reaches ``phi`` times the window count, at every state of the view.

    Input rows are snapshots: ``time`` (the window's last step, µs), ``shard``, ``seq`` (the
    shard's snapshot number), ``sketch`` (a :class:`~windowkit.core.sketches.CountMin` as
    bytes; every shard's must hash alike) and the window's bounds. Rows at the same time are
    taken in order of ``shard``, then ``seq``.

    Parameters
    ----------
    keys : sequence of int
        The candidates' int64 keys (the sketched items' keys).
    phi : float
        In (0, 1].
    latest : bool
        Only the final view (that of every shard's latest snapshot), once the input ends.

    Examples
    --------
    >>> a, b = CountMin(2, 16, seed=1), CountMin(2, 16, seed=1)
    >>> a.update([5, 5, 5, 6]); b.update([5, 7])
    >>> snaps = pd.DataFrame({"time": [10, 20], "shard": [0, 1], "seq": [0, 0],
    ...                       "sketch": [a.to_bytes(), b.to_bytes()],
    ...                       "window_start": [0, 0], "window_end": [30, 30]})
    >>> op = HeavyHittersOperator([5, 6, 7], phi=0.3)
    >>> out = op.process(snaps)  # item 5 (candidate 0): 3 of 4, then 4 of 6
    >>> out[["view", "candidate", "estimate"]].values.tolist(), out["window_count"].tolist()
    ([[0, 0, 3], [1, 0, 4]], [4.0, 6.0])
    """

    FORMAT_TAG = "CMHEAVYH"
    FORMAT_VERSION = 1

    def __init__(self, keys: Sequence[int], phi: float, latest: bool = False) -> None:
        self.keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        check_in_range("phi", phi, 0, 1, low_open=True)
        self.phi = float(phi)
        self.latest = bool(latest)
        self.views = 0
        # each shard's latest sketch, in the order the shards first came (the sum's order)
        self.current: dict[int, bytes] = {}
        # (time, window_start, window_end, shard) of the latest snapshot
        self.last: tuple[int, int, int, int] | None = None
        self._counts: dict[int, np.ndarray] = {}
        self._cells: np.ndarray | None = None

    @property
    def input_schema(self) -> list[tuple[str, str]]:
        """A snapshot's ``shard``, ``seq``, ``sketch`` and window bounds."""
        return [("shard", "int64"), ("seq", "int64"), ("sketch", "binary"),
                ("window_start", "timestamp"), ("window_end", "timestamp")]

    @property
    def output_schema(self) -> list[tuple[str, str]]:
        """One row per heavy hitter of a view: the view's number and the snapshot that made
        it, the candidate's place, its estimate, the window count and the threshold."""
        return [("view", "int64"), ("time", "timestamp"), ("window_start", "timestamp"),
                ("window_end", "timestamp"), ("shard", "int64"), (CANDIDATE, "int64"),
                ("estimate", "int64"), ("window_count", "float64"), ("threshold", "float64")]

    def process(self, batch: pd.DataFrame) -> pd.DataFrame:
        """Replay the snapshots; return the heavy hitters of each view (none with ``latest``)."""
        order = np.lexsort((batch["seq"].to_numpy(), batch["shard"].to_numpy(),
                            batch["time"].to_numpy()))
        columns = [batch[c].to_numpy() for c in ("time", "window_start", "window_end",
                                                  "shard", "sketch")]
        found = []
        for i in order:
            time, start, end, shard, sketch = (column[i] for column in columns)
            self.current[int(shard)] = bytes(sketch)
            self._counts.pop(int(shard), None)
            self.last = (int(time), int(start), int(end), int(shard))
            self.views += 1
            if not self.latest:
                found.append(self._view(self.views - 1))
        return pd.concat(found, ignore_index=True) if found else self.empty_output()

    def finish(self) -> pd.DataFrame:
        """With ``latest``, the final view's heavy hitters."""
        if self.latest and self.last is not None:
            return self._view(0)
        return self.empty_output()

    def _view(self, view: int) -> pd.DataFrame:
        """The heavy hitters of the view the current sketches make."""
        hit, estimates, window_count, threshold = heavy_hitters_of_view(
            [self._matrix(shard) for shard in self.current], self._columns(), self.phi)
        time, start, end, shard = self.last
        return pd.DataFrame({
            "view": view, "time": time, "window_start": start, "window_end": end,
            "shard": shard, CANDIDATE: hit, "estimate": estimates,
            "window_count": window_count, "threshold": threshold,
        }, columns=[c for c, _ in self.output_schema])

    def _matrix(self, shard: int) -> np.ndarray:
        if shard not in self._counts:
            counts = CountMin.from_bytes(self.current[shard]).counts
            self._counts[shard] = np.asarray(counts, dtype=np.float64)
        return self._counts[shard]

    def _columns(self) -> np.ndarray:
        """The candidates' columns in the sketches, found once (every shard's sketch hashes
        alike)."""
        if self._cells is None:
            config = CountMin.from_bytes(self.current[self.last[3]]).config
            self._cells = config.columns(self.keys)
        return self._cells

    def to_bytes(self) -> bytes:
        """Serialize the parameters, the view count and every shard's latest sketch."""
        meta = {"phi": self.phi, "latest": self.latest, "views": self.views,
                "shards": list(self.current), "last": None if self.last is None
                else list(self.last)}
        arrays = {"keys": self.keys,
                  **{f"sketch_{i}": np.frombuffer(blob, dtype=np.uint8)
                     for i, blob in enumerate(self.current.values())}}
        return pack_state(self.FORMAT_TAG, self.FORMAT_VERSION, meta, arrays)

    @classmethod
    @state_decoder
    def from_bytes(cls, blob: bytes) -> HeavyHittersOperator:
        """Rebuild an operator from :meth:`to_bytes` output.

        Examples
        --------
        >>> op = HeavyHittersOperator([1, 2], phi=0.5, latest=True)
        >>> HeavyHittersOperator.from_bytes(op.to_bytes()).keys.tolist()
        [1, 2]
        """
        meta, arrays = unpack_state(blob, cls.FORMAT_TAG, cls.FORMAT_VERSION)
        op = cls(arrays["keys"], meta["phi"], meta["latest"])
        op.views = int(meta["views"])
        op.current = {int(shard): arrays[f"sketch_{i}"].tobytes()
                      for i, shard in enumerate(meta["shards"])}
        last = meta["last"]
        op.last = None if last is None else tuple(int(v) for v in last)
        # the sketches decoded now, so that a corrupt one is refused here, not in a later view
        shapes = {op._matrix(shard).shape for shard in op.current}
        if len(shapes) > 1 or (op.last is None) != (not op.current) or (
                op.last is not None and op.last[3] not in op.current) or op.views < 0:
            msg = "its shards' sketches, their number and the latest snapshot disagree"
            raise ValueError(msg)
        return op


def heavy_hitters_of_view(matrices: Sequence[np.ndarray], columns: np.ndarray, phi: float
                          ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The heavy hitters of the coordinator's view the shards' ``matrices`` sum to (summed in
    the order given): the places of the candidates (whose ``columns`` in the sketch are
    given) whose estimate reaches ``phi`` times the window count and is positive, their
    estimates, the window count (the mean row sum) and the threshold.

    Examples
    --------
    >>> a = np.array([[3.0, 1.0]]); b = np.array([[1.0, 1.0]])
    >>> places, estimates, count, threshold = heavy_hitters_of_view(
    ...     [a, b], np.array([[0, 1]]), 0.5)
    >>> places.tolist(), estimates.tolist(), count, threshold
    ([0], [4], 6.0, 3.0)
    """
    total = np.sum(matrices, axis=0)
    window_count = float(total.sum(axis=1).mean())
    threshold = phi * window_count
    estimates = estimate_counts(total, columns)
    hit = np.flatnonzero((estimates >= threshold) & (estimates > 0))
    return hit.astype(np.int64), estimates[hit], window_count, threshold
