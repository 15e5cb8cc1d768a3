"""Timing a streaming query for the benches: end to end, and per micro-batch.

A query's first micro-batch also starts it (plans it, starts the Python workers and the
driver's worker that asks a stateful processor for its state schema, warms the JIT), so the
benches report it apart from the micro-batches after it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StreamTiming:
    """Seconds from ``start()`` until every available input was processed, and each
    micro-batch that read rows as ``(rows, seconds)``.

    Examples
    --------
    >>> timing = StreamTiming(5.0, [(100, 3.0), (100, 1.0), (100, 1.0)])
    >>> timing.first_micro_batch_seconds, timing.after_first_rate
    (3.0, 100.0)
    """

    seconds: float
    micro_batches: list[tuple[int, float]]

    @property
    def first_micro_batch_seconds(self) -> float | None:
        return self.micro_batches[0][1] if self.micro_batches else None

    @property
    def after_first_rate(self) -> float | None:
        """Rows per second over the micro-batches after the first."""
        rows = sum(n for n, _ in self.micro_batches[1:])
        seconds = sum(s for _, s in self.micro_batches[1:])
        return rows / seconds if seconds else None


def time_stream(writer: Any) -> StreamTiming:
    """Start ``writer`` (a ``DataStreamWriter``), process everything available, stop.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> spark.range(3).write.mode("overwrite").parquet(folder)
    >>> stream = spark.readStream.schema("id long").parquet(folder)
    >>> timing = time_stream(stream.writeStream.format("noop").option(
    ...     "checkpointLocation", tempfile.mkdtemp()))
    >>> [rows for rows, _ in timing.micro_batches]
    [3]
    """
    start = time.perf_counter()
    query = writer.start()
    try:
        query.processAllAvailable()
        seconds = time.perf_counter() - start
        batches = [(p["numInputRows"], p["durationMs"]["triggerExecution"] / 1000)
                   for p in query.recentProgress if p["numInputRows"]]
    finally:
        query.stop()
    return StreamTiming(seconds, batches)
