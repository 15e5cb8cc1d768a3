"""Progress of a run as it goes: Spark's stages and tasks on batch jobs, a line per micro-batch.

Batch: a background thread reads Spark's status tracker once a second and shows the running
stages' tasks done / total (rewritten in place on a terminal, a line every few seconds when
the output is a file or a pipe, so logs stay short). Streaming: one line per micro-batch with
rows in, rows out, late and malformed rows, and the watermark.
"""

from __future__ import annotations

import threading
import time
from typing import TextIO

from windowkit.cli.common import Progress

#: Rejection reasons every technique uses; any other value of the reason column is output.
REJECTION_REASONS = ("malformed", "late")


def stage_line(stages: list[tuple[int, int, int]]) -> str:
    """The status of running stages ``(stage id, tasks done, tasks in all)`` in a few words.

    Examples
    --------
    >>> stage_line([(4, 3, 8), (5, 0, 2)])
    'stages 4, 5: tasks 3/10'
    >>> stage_line([])
    'waiting for Spark'
    """
    if not stages:
        return "waiting for Spark"
    ids = ", ".join(str(s) for s, _, _ in stages)
    done = sum(d for _, d, _ in stages)
    total = sum(t for _, _, t in stages)
    return f"stage{'s' if len(stages) > 1 else ''} {ids}: tasks {done}/{total}"


class StageProgress:
    """Show Spark's running stages while a block runs (a context manager).

    Examples
    --------
    >>> import io
    >>> with StageProgress(spark, Progress(stream=io.StringIO()), "counting"):
    ...     rows = spark.range(10).count()
    >>> rows
    10
    """

    def __init__(self, spark, progress: Progress, label: str, every: float = 10.0,
                 poll: float = 1.0) -> None:
        from windowkit.spark.session import is_connect

        self.spark = spark
        self.stages = _ConnectStages() if is_connect(spark) else _TrackerStages(spark)
        self.progress = progress
        self.label = label
        self.every = every
        self.poll = poll
        self.stream: TextIO = progress.stream
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> StageProgress:
        self.stages.attach(self.spark)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.stages.detach(self.spark)
        if self.live:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def _stages(self) -> list[tuple[int, int, int]]:
        return self.stages.running()

    def _watch(self) -> None:
        shown = time.perf_counter()  # a short job prints nothing
        last = ""
        while True:
            try:
                line = stage_line(self._stages())
            except Exception:  # the context is stopping; progress is best effort
                line = last
            now = time.perf_counter()
            elapsed = now - self.progress.t0
            text = f"[windowkit {elapsed:6.1f}s] {self.label}: {line}"
            if self.live:
                self.stream.write("\r\033[K" + text)
                self.stream.flush()
            elif line != last and now - shown >= self.every and line != "waiting for Spark":
                print(text, file=self.stream, flush=True)
                shown = now
            last = line
            if self._stop.wait(self.poll):
                return


class _TrackerStages:
    """Running stages from the driver's status tracker (a classic session)."""

    def __init__(self, spark) -> None:
        self.tracker = spark.sparkContext.statusTracker()

    def attach(self, spark) -> None:
        """Nothing to do: the tracker is read when asked."""

    detach = attach

    def running(self) -> list[tuple[int, int, int]]:
        stages = []
        for stage_id in sorted(self.tracker.getActiveStageIds()):
            info = self.tracker.getStageInfo(stage_id)
            if info is not None:
                stages.append((stage_id, info.numCompletedTasks, info.numTasks))
        return stages


class _ConnectStages:
    """Running stages as a Spark Connect server reports them with each operation's results
    (a progress handler of the client session)."""

    def __init__(self) -> None:
        self._stages: list[tuple[int, int, int]] = []

    def attach(self, spark) -> None:
        spark.registerProgressHandler(self)

    def detach(self, spark) -> None:
        spark.removeProgressHandler(self)

    def __call__(self, stages, inflight_tasks: int, operation_id: str | None,
                 done: bool) -> None:
        self._stages = [] if done else [
            (s.stage_id, s.num_completed_tasks, s.num_tasks) for s in stages or () if not s.done]

    def running(self) -> list[tuple[int, int, int]]:
        return list(self._stages)


def batch_line(step: str, batch_id: int, counts: dict[str, int], rows_in: int | None,
               watermark: str | None) -> str:
    """One micro-batch's progress line.

    Examples
    --------
    >>> batch_line("frames", 3, {"final": 5, "fragment": 2, "late": 1}, 120, "2024-01-01T00:02")
    'frames micro-batch 3: 120 rows in, 7 out, 1 late, 0 malformed, watermark 2024-01-01T00:02'
    """
    out = sum(n for reason, n in counts.items() if reason not in REJECTION_REASONS)
    shown_in = "?" if rows_in is None else f"{rows_in:,}"
    return (f"{step} micro-batch {batch_id}: {shown_in} rows in, {out:,} out, "
            f"{counts.get('late', 0):,} late, {counts.get('malformed', 0):,} malformed, "
            f"watermark {watermark or 'none yet'}")


class MicroBatchProgress:
    """Collects each micro-batch's output counts and prints its line once Spark reports the
    batch's input rows and watermark (a ``StreamingQueryListener``)."""

    def __init__(self, spark, progress: Progress) -> None:
        from pyspark.sql.streaming import StreamingQueryListener

        outer = self

        class _Listener(StreamingQueryListener):
            def onQueryStarted(self, event) -> None:  # noqa: N802 - Spark's names
                pass

            def onQueryProgress(self, event) -> None:  # noqa: N802
                outer._on_progress(event.progress)

            def onQueryIdle(self, event) -> None:  # noqa: N802
                pass

            def onQueryTerminated(self, event) -> None:  # noqa: N802
                pass

        self.spark = spark
        self.progress = progress
        self.step = ""
        #: The running query's id: a late event of the query before must not take the counts
        #: of this one's batch of the same number.
        self.query_id: str | None = None
        self._counts: dict[int, dict[str, int]] = {}
        self._lock = threading.Lock()
        self._listener = _Listener()
        spark.streams.addListener(self._listener)

    def on_batch(self, batch_id: int, counts: dict[str, int]) -> None:
        """``write_stream_exactly_once``'s callback: remember a written batch's counts."""
        with self._lock:
            self._counts[batch_id] = counts

    def _on_progress(self, report) -> None:
        if self.query_id is not None and str(report.id) != self.query_id:
            return
        with self._lock:
            counts = self._counts.pop(report.batchId, None)
        if counts is None:
            return
        watermark = (report.eventTime or {}).get("watermark")
        if watermark and watermark.startswith("1970-01-01T00:00:00"):
            watermark = None  # Spark's initial value: no event time seen yet
        self.progress.step(batch_line(self.step, report.batchId, counts, report.numInputRows,
                                      watermark))

    def flush(self, query) -> None:
        """Print the lines of a stopped query's batches that the listener has not reported
        yet (its events arrive asynchronously), from the query's own progress records."""
        self.query_id = str(query.id)
        for report in query.recentProgress:
            self._on_progress(report)
        self.query_id = None

    def close(self) -> None:
        """Stop listening; print what was written but not yet reported."""
        self.spark.streams.removeListener(self._listener)
        with self._lock:
            left, self._counts = self._counts, {}
        for batch_id, counts in sorted(left.items()):
            self.progress.step(batch_line(self.step, batch_id, counts, None, None))

