"""A windowed Count-Min sketch behind the :class:`~windowkit.core.operator.StreamOperator` contract.

Each shard runs one operator; every ``snapshot_every`` samples it emits the current count matrix
(the DistCM scheme of the paper, Section 3.5: by default every ``ceil(epsilon * N)`` samples), so
a coordinator (a Spark aggregation) merges the latest snapshot of each shard with
:func:`merge_snapshots`. Snapshots are emitted at exact sample counts, independent of how the
input is cut into batches.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from windowkit.core.operator import StreamOperator
from windowkit.core.serialization import pack_state, state_decoder, unpack_state
from windowkit.core.sketches import (
    CountMin,
    PerfectWindowCM,
    ProportionalWindowCM,
    SimpleWindowCM,
    SplitterWindowCM,
)
from windowkit.core.sketches._window import WindowedCountMin
from windowkit.core.validation import check_int

_SKETCHES: dict[str, type[WindowedCountMin]] = {
    cls.FORMAT_TAG: cls
    for cls in (PerfectWindowCM, SimpleWindowCM, ProportionalWindowCM, SplitterWindowCM)
}

ITEM = "item"
"""Name of the input column holding the items (int64 hashes or strings)."""


class WindowedCountMinOperator(StreamOperator):
    """Feed ``(time, item)`` rows to a windowed Count-Min and emit periodic snapshots.

    Parameters
    ----------
    sketch : WindowedCountMin
        The sketch to drive (its state is the operator's state).
    snapshot_every : int, optional
        Emit a snapshot after every this many samples; default ``ceil(epsilon * N)`` with
        ``epsilon = e / width``.
    tick_micros : int, optional
        Required for ``unit="ticks"`` sketches: the tick length in microseconds; a row's tick is
        ``time // tick_micros``. Not allowed for count-based sketches.

    Output columns: ``seq`` (snapshot number), ``n_seen`` (samples consumed), ``time`` (time of
    the last consumed sample), ``sketch`` (:meth:`CountMin.to_bytes` of the current cell
    values, mergeable across shards and variants).

    Examples
    --------
    >>> op = WindowedCountMinOperator(ProportionalWindowCM(100, depth=1, width=28),
    ...                               snapshot_every=2)
    >>> out = op.process(pd.DataFrame({"time": [1, 2, 3], "item": ["a", "b", "a"]}))
    >>> out[["seq", "n_seen", "time"]].values.tolist()
    [[0, 2, 2]]
    >>> merge_snapshots(out["sketch"]).estimate(["a"]).tolist()
    [1]
    """

    FORMAT_TAG = "CMOPERAT"
    FORMAT_VERSION = 1

    def __init__(
        self,
        sketch: WindowedCountMin,
        snapshot_every: int | None = None,
        tick_micros: int | None = None,
    ) -> None:
        if not isinstance(sketch, WindowedCountMin):
            msg = f"`sketch` must be a windowed Count-Min sketch; got {type(sketch).__name__}"
            raise ValueError(msg)
        if snapshot_every is None:
            snapshot_every = max(1, math.ceil(sketch.epsilon * sketch.window))
        self.snapshot_every = check_int("snapshot_every", snapshot_every, 1)
        if sketch.unit == "ticks":
            if tick_micros is None:
                msg = "`tick_micros` is required for a sketch with unit='ticks'"
                raise ValueError(msg)
            tick_micros = check_int("tick_micros", tick_micros, 1)
        elif tick_micros is not None:
            msg = "`tick_micros` is only for sketches with unit='ticks'"
            raise ValueError(msg)
        self.sketch = sketch
        self.tick_micros = tick_micros
        self.seq = 0
        self.n_seen = 0
        self.last_time = 0

    @property
    def output_schema(self) -> list[tuple[str, str]]:
        """``seq``, ``n_seen``, ``time`` and ``sketch``."""
        return [("seq", "int64"), ("n_seen", "int64"), ("time", "timestamp"),
                ("sketch", "binary")]

    def _feed(self, items: Any, times: np.ndarray) -> None:
        if len(times) == 0:
            return
        if self.tick_micros is None:
            self.sketch.update(items)
        else:
            self.sketch.update(items, ticks=times // self.tick_micros)
        self.n_seen += len(times)
        self.last_time = int(times[-1])

    def _snapshot(self) -> dict[str, Any]:
        row = {"seq": self.seq, "n_seen": self.n_seen, "time": self.last_time,
               "sketch": self.sketch.to_count_min().to_bytes()}
        self.seq += 1
        return row

    def process(self, batch: pd.DataFrame) -> pd.DataFrame:
        """Consume rows sorted by ``time``; return the snapshots due within them."""
        times = batch["time"].to_numpy().astype(np.int64, copy=False)
        items = batch[ITEM].to_numpy()
        every = self.snapshot_every
        n = len(times)
        first = every - self.n_seen % every  # 1-based position of the first snapshot
        rows = []
        start = 0
        for stop in range(first, n + 1, every):
            self._feed(items[start:stop], times[start:stop])
            rows.append(self._snapshot())
            start = stop
        self._feed(items[start:], times[start:])
        return self._frame(rows)

    def finish(self) -> pd.DataFrame:
        """Emit a final snapshot of the current window."""
        return self._frame([self._snapshot()])

    def _frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        if not rows:
            return self.empty_output()
        out = pd.DataFrame(rows, columns=[c for c, _ in self.output_schema])
        return out.astype({"seq": "int64", "n_seen": "int64", "time": "int64"})

    def to_bytes(self) -> bytes:
        """Serialize parameters, counters and the sketch."""
        meta = {
            "sketch_tag": self.sketch.FORMAT_TAG,
            "snapshot_every": self.snapshot_every,
            "tick_micros": self.tick_micros,
            "seq": self.seq,
            "n_seen": self.n_seen,
            "last_time": self.last_time,
        }
        sketch = np.frombuffer(self.sketch.to_bytes(), dtype=np.uint8)
        return pack_state(self.FORMAT_TAG, self.FORMAT_VERSION, meta, {"sketch": sketch})

    @classmethod
    @state_decoder
    def from_bytes(cls, blob: bytes) -> WindowedCountMinOperator:
        """Rebuild an operator from :meth:`to_bytes` output.

        Examples
        --------
        >>> op = WindowedCountMinOperator(SimpleWindowCM(10, depth=1, width=8))
        >>> WindowedCountMinOperator.from_bytes(op.to_bytes()).snapshot_every
        4
        """
        meta, arrays = unpack_state(blob, cls.FORMAT_TAG, cls.FORMAT_VERSION)
        sketch_cls = _SKETCHES[meta["sketch_tag"]]
        sketch = sketch_cls.from_bytes(arrays["sketch"].tobytes())
        op = cls(sketch, meta["snapshot_every"], meta["tick_micros"])
        op.seq = int(meta["seq"])
        op.n_seen = int(meta["n_seen"])
        op.last_time = int(meta["last_time"])
        return op


def merge_snapshots(blobs: Iterable[bytes]) -> CountMin:
    """Sum snapshot matrices (e.g. the latest of each shard) into one :class:`CountMin`.

    Examples
    --------
    >>> a, b = CountMin(1, 8), CountMin(1, 8)
    >>> a.update([1]); b.update([1, 1])
    >>> merge_snapshots([a.to_bytes(), b.to_bytes()]).estimate([1]).tolist()
    [3]
    """
    total: CountMin | None = None
    for blob in blobs:
        cm = CountMin.from_bytes(blob)
        if total is None:
            total = cm
        else:
            total.merge(cm)
    if total is None:
        msg = "`blobs` must hold at least one snapshot"
        raise ValueError(msg)
    return total
