"""Progress of a long command (issue #38): the step, the rows read, the time left; a line at
least every few seconds when piped; nothing with ``--quiet``; the subcommands show the same
line as ``windowkit run``."""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import SimpleNamespace

import pytest

from windowkit.cli.common import Progress
from windowkit.pipeline.progress import StageProgress


class _Tracker:
    """A status tracker whose stage 3 of 4 tasks finishes one task every ``per`` looks."""

    def __init__(self, per: int = 1, stop: int = 10**9) -> None:
        self.looks = 0
        self.per = per
        self.stop = stop

    def getActiveStageIds(self):  # noqa: N802 - Spark's name
        self.looks += 1
        return [3] if self.looks < self.stop else []

    def getStageInfo(self, stage_id):  # noqa: N802
        return SimpleNamespace(numCompletedTasks=min(self.looks // self.per, 3), numTasks=4)


class _Stages(BaseHTTPRequestHandler):
    """Spark's REST API of stages: a finished stage read 1,000 records before the block; the
    running one reads 500 more at each request."""

    requests = 0

    def do_GET(self):  # noqa: N802 - http.server's name
        type(self).requests += 1
        body = json.dumps([{"stageId": 1, "status": "COMPLETE", "inputRecords": 1000},
                           {"stageId": 3, "status": "ACTIVE",
                            "inputRecords": 500 * (type(self).requests - 1)}]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def ui():
    server = HTTPServer(("127.0.0.1", 0), _Stages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def _session(tracker, url=None):
    return SimpleNamespace(sparkContext=SimpleNamespace(
        statusTracker=lambda: tracker, uiWebUrl=url, applicationId="app-1"))


def _watch(spark, progress: Progress, looks: int, tracker: _Tracker, every: float = 0.0):
    with StageProgress(spark, progress, "step flows", every=every, poll=0.01):
        while tracker.looks < looks:
            threading.Event().wait(0.01)
    return [line.split("] ", 1)[1] for line in progress.stream.getvalue().splitlines()]


def test_progress_shows_the_rows_read_and_the_time_left_issue38(ui):
    tracker = _Tracker(per=20)
    shown = _watch(_session(tracker, ui), Progress(stream=io.StringIO()), 80, tracker)
    read = [int(line.split(", ")[1].split()[0].replace(",", "")) for line in shown
            if "rows read" in line]
    # counted from the block's first stage (the earlier stage's 1,000 records are another
    # step's), as the UI answers
    assert read and read[0] < 1000 and read == sorted(read) and read[-1] >= 1500
    # once a task has finished, the pace of the stage gives an estimate
    assert any(line.startswith("step flows: stage 3: tasks 1/4") and line.endswith(" s left")
               for line in shown)
    assert all("left" not in line for line in shown if "tasks 0/4" in line)


def test_progress_without_a_spark_ui_shows_tasks_only_issue38():
    tracker = _Tracker()
    shown = _watch(_session(tracker, None), Progress(stream=io.StringIO()), 4, tracker)
    assert shown and all("rows read" not in line for line in shown)


def test_piped_progress_prints_a_line_even_when_nothing_changed_issue38():
    tracker = _Tracker(per=10**6)  # stuck at 0/4 tasks
    shown = _watch(_session(tracker), Progress(stream=io.StringIO()), 8, tracker)
    assert len(shown) >= 3 and set(shown) == {"step flows: stage 3: tasks 0/4"}
    assert StageProgress(_session(tracker), Progress(stream=io.StringIO()), "x").every <= 5


def test_quiet_progress_prints_nothing_issue38():
    tracker = _Tracker()
    progress = Progress(stream=io.StringIO(), quiet=True)
    with StageProgress(_session(tracker), progress, "step flows", every=0.0, poll=0.01):
        threading.Event().wait(0.1)
    assert progress.stream.getvalue() == "" and tracker.looks == 0


@pytest.mark.spark
def test_a_subcommand_shows_its_writes_progress_and_micro_batch_lines_issue38(
        spark, tmp_path, monkeypatch, capsys):
    from windowkit.cli import main
    from windowkit.pipeline import progress

    shown = []

    class Recording(StageProgress):
        def __init__(self, spark, progress, label, **kwargs) -> None:
            shown.append(label)
            super().__init__(spark, progress, label, **kwargs)

    monkeypatch.setattr(progress, "StageProgress", Recording)
    lines = ["src,ts,bytes"] + [f"s{i % 2},2024-01-01 00:{i:02d}:00,{i}" for i in range(20)]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "flows.csv").write_text("\n".join(lines) + "\n")
    window = "RANGES 10 MINUTES, 1 MINUTE SLIDES 1 MINUTE, 1 MINUTE"
    common = ["multigranular", "--input", str(tmp_path / "in"), "--format", "csv",
              "--time", "ts", "--by", "src", "--value", "bytes", "--window", window]
    assert main([*common, "--output", str(tmp_path / "batch")]) == 0
    assert shown == ["writing reports", "writing rejected"]
    capsys.readouterr()
    assert main([*common, "--output", str(tmp_path / "stream"), "--stream",
                 "--checkpoint", str(tmp_path / "ck")]) == 0
    err = capsys.readouterr().err
    batches = [line.split("] ", 1)[1] for line in err.splitlines() if "micro-batch" in line]
    # the line `windowkit run` prints: rows in and out, none of the outcome's null value
    assert batches and batches[0].startswith("multigranular micro-batch 0: 20 rows in, ")
    assert "None" not in err
