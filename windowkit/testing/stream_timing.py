"""Timing a streaming query for the benches: end to end, and per micro-batch.

A query's first micro-batch also starts it (plans it, starts the Python workers and the
driver's worker that asks a stateful processor for its state schema, warms the JIT), so the
benches report it apart from the micro-batches after it. The first streaming query of a session
also pays for what every later one reuses (its first stateful task waited 0.4 s, not 0.09 s,
before its Python worker got the task; the JVM compiles the hot code during it), so the
benches time several queries and report the median and each.
"""

from __future__ import annotations

import statistics
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


def summarize_runs(timings: list[StreamTiming], rows: int) -> dict:
    """Several end-to-end runs of one query over ``rows`` rows: the median and each run.

    Examples
    --------
    >>> summary = summarize_runs([StreamTiming(5.0, [(100, 3.0), (100, 1.0)]),
    ...                           StreamTiming(2.0, [(100, 1.0), (100, 1.0)]),
    ...                           StreamTiming(4.0, [(100, 2.0), (100, 2.0)])], 200)
    >>> summary["seconds"], summary["rows_per_s"], summary["first_query_rows_per_s"]
    (4.0, 50.0, 40.0)
    >>> [run["first_micro_batch_seconds"] for run in summary["each"]]
    [3.0, 1.0, 2.0]
    """
    each = [{"seconds": t.seconds, "rows_per_s": rows / t.seconds,
             "first_micro_batch_seconds": t.first_micro_batch_seconds,
             "after_first_rows_per_s": t.after_first_rate,
             "micro_batch_seconds": [s for _, s in t.micro_batches]} for t in timings]
    seconds = statistics.median(t.seconds for t in timings)
    return {"runs": len(timings), "seconds": seconds, "rows_per_s": rows / seconds,
            "first_query_rows_per_s": each[0]["rows_per_s"], "each": each}


def describe_runs(summary: dict, unit: str = "rows") -> list[str]:
    """One line per run of :func:`summarize_runs`' ``summary``, rates in M ``unit``/s.

    Examples
    --------
    >>> summary = summarize_runs([StreamTiming(5.0, [(10**6, 3.0), (10**6, 1.0)])], 2 * 10**6)
    >>> describe_runs(summary, "events")[0]
    "  query 1: 0.400 M events/s (5.0 s); first micro-batch 3.0 s, the others 1.000 M events/s  (the session's first streaming query)"
    """  # noqa: E501 - the doctest shows one whole line
    return [f"  query {i + 1}: {run['rows_per_s'] / 1e6:.3f} M {unit}/s ({run['seconds']:.1f} s);"
            f" first micro-batch {run['first_micro_batch_seconds']:.1f} s, the others "
            f"{run['after_first_rows_per_s'] / 1e6:.3f} M {unit}/s"
            + ("  (the session's first streaming query)" if i == 0 else "")
            for i, run in enumerate(summary["each"])]
