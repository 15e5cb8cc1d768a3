"""Progress of a run as it goes: Spark's stages and tasks on batch jobs, a line per micro-batch.

Batch: a background thread reads Spark's status tracker once a second and shows the running
stages' tasks done / total, the rows they read (the tasks' input records, from Spark's status
store) and an estimate of the time left (rewritten in place on a terminal, a line every 5
seconds when the output is a file or a pipe, so logs stay short). The command line's
subcommands and ``windowkit run`` show the same line. Streaming: one line per micro-batch with
rows in, rows out, late and malformed rows, and the watermark.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from typing import TextIO

from windowkit.cli.common import Progress

#: Rejection reasons every technique uses; any other value of the reason column is output.
REJECTION_REASONS = ("malformed", "late")

#: What a command's own session sets so its progress shows the rows read: Spark serves its
#: tasks' metrics (input records) over the UI's REST API only while the UI runs.
STATUS_CONF = {"spark.ui.enabled": "true"}


def status_conf(remote: str | None) -> dict[str, str] | None:
    """The ``extra_conf`` of a command's session: :data:`STATUS_CONF` for a session this
    process starts; None on Spark Connect (its server reports the stages with each
    operation's results) or when a session is already running (it is kept as it is).

    Examples
    --------
    >>> status_conf("sc://host:15002") is None
    True
    """
    from pyspark.sql import SparkSession

    if remote or SparkSession.getActiveSession() is not None:
        return None
    return dict(STATUS_CONF)


def stage_line(stages: list[tuple[int, int, int]], read: str | None = None,
               left: float | None = None) -> str:
    """The status of running stages ``(stage id, tasks done, tasks in all)`` in a few words,
    with what they have read so far and the time left, when known.

    Examples
    --------
    >>> stage_line([(4, 3, 8), (5, 0, 2)])
    'stages 4, 5: tasks 3/10'
    >>> stage_line([(9, 1, 2)], "512,000 rows read", 11.6)
    'stage 9: tasks 1/2, 512,000 rows read, about 12 s left'
    >>> stage_line([], "1,024 rows read")
    'waiting for Spark, 1,024 rows read'
    """
    if not stages:
        head = "waiting for Spark"
    else:
        ids = ", ".join(str(s) for s, _, _ in stages)
        done = sum(d for _, d, _ in stages)
        total = sum(t for _, _, t in stages)
        head = f"stage{'s' if len(stages) > 1 else ''} {ids}: tasks {done}/{total}"
    parts = [head] + ([read] if read else []) + (
        [f"about {left:,.0f} s left"] if left is not None else [])
    return ", ".join(parts)


class TimeLeft:
    """Estimates the time a set of running stages still needs from the pace of its tasks
    (none before the first task ends, or when Spark does not know the total).

    Examples
    --------
    >>> left = TimeLeft()
    >>> left.update([(3, 0, 4)], now=10.0) is None
    True
    >>> left.update([(3, 1, 4)], now=14.0)
    12.0
    """

    def __init__(self) -> None:
        self._ids: tuple[int, ...] = ()
        self._since = 0.0

    def update(self, stages: list[tuple[int, int, int]], now: float) -> float | None:
        ids = tuple(s for s, _, _ in stages)
        if ids != self._ids:
            self._ids, self._since = ids, now
        done = sum(d for _, d, _ in stages)
        total = sum(t for _, _, t in stages)
        if not 0 < done < total:
            return None
        return (now - self._since) * (total - done) / done


class StageProgress:
    """Show Spark's running stages, the rows read and the time left while a block runs (a
    context manager).

    On a terminal the line is rewritten in place every ``poll`` seconds; on a file or a pipe a
    line is printed every ``every`` seconds; with ``progress.quiet`` nothing is shown.

    Examples
    --------
    >>> import io
    >>> with StageProgress(spark, Progress(stream=io.StringIO()), "counting"):
    ...     rows = spark.range(10).count()
    >>> rows
    10
    """

    def __init__(self, spark, progress: Progress, label: str, every: float = 5.0,
                 poll: float = 1.0) -> None:
        from windowkit.spark.session import is_connect

        self.spark = spark
        self.quiet = progress.quiet
        self.stages = (_ConnectStages() if is_connect(spark) else _TrackerStages(spark, poll)
                       ) if not self.quiet else None
        self.progress = progress
        self.label = label
        self.every = every
        self.poll = poll
        self.stream: TextIO = progress.stream
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> StageProgress:
        if self.stages is not None:
            self.stages.attach(self.spark)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.stages is None:
            return
        self._stop.set()
        self._thread.join()
        self.stages.detach(self.spark)
        if self.live:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def _line(self, left: TimeLeft) -> str:
        stages = self.stages.running()
        return stage_line(stages, self.stages.read(), left.update(stages, time.perf_counter()))

    def _watch(self) -> None:
        shown = time.perf_counter()  # a short job prints nothing
        last = ""
        left = TimeLeft()
        while True:
            try:
                line = self._line(left)
            except Exception:  # the context is stopping; progress is best effort
                line = last
            now = time.perf_counter()
            text = f"[windowkit {now - self.progress.t0:6.1f}s] {self.label}: {line}"
            if self.live:
                self.stream.write("\r\033[K" + text)
                self.stream.flush()
            elif now - shown >= self.every:
                print(text, file=self.stream, flush=True)
                shown = now
            last = line
            if self._stop.wait(self.poll):
                return


class _TrackerStages:
    """Running stages from the driver's status tracker, and the rows they read from its
    status store (Spark's REST API, when the UI runs): a classic session."""

    def __init__(self, spark, poll: float = 1.0) -> None:
        context = spark.sparkContext
        self.tracker = context.statusTracker()
        url = getattr(context, "uiWebUrl", None)
        self.records = (InputRecords.of(on_loopback(url), context.applicationId, poll)
                        if url else None)
        #: The block's first stage: the rows it reads are those of this stage and later ones.
        self.first: int | None = None

    def attach(self, spark) -> None:
        """Start reading the input records."""
        if self.records is not None:
            self.records.start()

    def detach(self, spark) -> None:
        """Stop reading the input records."""
        if self.records is not None:
            self.records.stop()

    def running(self) -> list[tuple[int, int, int]]:
        stages = []
        for stage_id in sorted(self.tracker.getActiveStageIds()):
            info = self.tracker.getStageInfo(stage_id)
            if info is not None:
                stages.append((stage_id, info.numCompletedTasks, info.numTasks))
        if stages and self.first is None:
            self.first = stages[0][0]
        return stages

    def read(self) -> str | None:
        rows = None if self.records is None else self.records.since(self.first)
        return None if rows is None else f"{rows:,} rows read"


def on_loopback(url: str) -> str:
    """The Spark UI at ``url``, reached on this machine's loopback: the driver's JVM runs
    beside this process, and the UI's advertised host name may lead nowhere from here.

    Examples
    --------
    >>> on_loopback("http://192.0.2.2:4041")
    'http://127.0.0.1:4041'
    """
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://127.0.0.1:{parts.port or 4040}"


class InputRecords:
    """The input records of an application's stages, as its Spark UI's REST API reports them
    from the tasks' metrics (finished tasks, and running ones at each executor heartbeat).

    A thread of its own asks while some block watches (:meth:`start`, :meth:`stop`): the
    API's first answer can take seconds, and a progress line must not wait for it.

    Examples
    --------
    >>> InputRecords("http://127.0.0.1:9", "app-1").fetch() is None   # no UI there
    True
    """

    _known: dict[str, InputRecords] = {}

    def __init__(self, url: str, app_id: str, every: float = 1.0) -> None:
        self.address = f"{url.rstrip('/')}/api/v1/applications/{app_id}/stages"
        self.every = every
        #: The latest answer: stage id -> input records (None before the first one).
        self.stages: dict[int, int] | None = None
        self._users = 0
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    @classmethod
    def of(cls, url: str, app_id: str, every: float = 1.0) -> InputRecords:
        """The one reader of an application's UI in this process (its answers warm up)."""
        reader = cls(url, app_id, every)
        return cls._known.setdefault(reader.address, reader)

    def fetch(self) -> dict[int, int] | None:
        """Stage id -> input records now, or None when the UI does not answer."""
        try:
            with urllib.request.urlopen(self.address, timeout=60) as answer:
                stages = json.load(answer)
        except (OSError, ValueError):
            return None
        return {int(s["stageId"]): int(s.get("inputRecords", 0)) for s in stages}

    def since(self, first: int | None) -> int | None:
        """The records read by stage ``first`` and later ones, as last answered."""
        stages = self.stages
        if stages is None or first is None:
            return None
        return sum(n for stage, n in stages.items() if stage >= first)

    def start(self) -> None:
        with self._changed:
            self._users += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._ask, daemon=True)
                self._thread.start()
            self._changed.notify()

    def stop(self) -> None:
        with self._changed:
            self._users -= 1

    def _ask(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._users > 0)
            found = self.fetch()
            if found is not None:
                self.stages = found
            time.sleep(self.every)


class _ConnectStages:
    """Running stages as a Spark Connect server reports them with each operation's results
    (a progress handler of the client session), with the bytes they read."""

    def __init__(self) -> None:
        self._stages: list[tuple[int, int, int]] = []
        self._bytes = 0

    def attach(self, spark) -> None:
        spark.registerProgressHandler(self)

    def detach(self, spark) -> None:
        spark.removeProgressHandler(self)

    def __call__(self, stages, inflight_tasks: int, operation_id: str | None,
                 done: bool) -> None:
        self._stages = [] if done else [
            (s.stage_id, s.num_completed_tasks, s.num_tasks) for s in stages or () if not s.done]
        self._bytes = sum(s.num_bytes_read for s in stages or ())

    def running(self) -> list[tuple[int, int, int]]:
        return list(self._stages)

    def read(self) -> str | None:
        return f"{self._bytes / 1e6:,.1f} MB read" if self._bytes else None


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

