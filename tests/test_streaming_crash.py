"""Issue 16, point 1: a streaming command killed with ``kill -9`` (at a random moment, and
between a micro-batch's write and its commit) and restarted on its checkpoint writes exactly
the rows of an uninterrupted run, and its output stays readable by pandas. And a Python worker
killed with ``kill -9`` in the middle of a windowkit task, in a batch job and in a micro-batch,
is retried by Spark: the command writes exactly the rows of an uninterrupted run."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import psutil
import pytest
from pyspark.sql import functions as F

from windowkit.datasets.routers import router_readings
from windowkit.spark.chunk_store import SPLIT_AT
from windowkit.spark.kill_hooks import WORKER_MARKER_ENV
from windowkit.spark.sinks import KILL_AFTER_WRITE_ENV
from windowkit.techniques import TECHNIQUES

pytestmark = [pytest.mark.spark, pytest.mark.slow]

N_FILES = 8


@pytest.fixture(scope="module")
def input_dir(spark, tmp_path_factory):
    """Six routers reporting every minute and thousands reporting three times, all but 64 of
    them in the shard of the first router (Spark's hash of the router, modulo the two
    shards): that shard keeps its keys in chunks (issue #17), the other its 64 routers in one
    value, so one run crashes both kinds of state (tests/test_spark_state_chunks.py checks on
    Spark that a shard holding more than SPLIT_AT keys keeps them in chunks)."""
    folder = tmp_path_factory.mktemp("crash") / "in"
    folder.mkdir()
    readings = router_readings(n_routers=6, n_reports=240, seed=11, mean_gap=60)
    candidates = pd.DataFrame({"router": [f"q{k:05d}" for k in range(3 * SPLIT_AT)]})
    shards = dict(spark.createDataFrame(pd.concat([candidates, readings[["router"]]]))
                  .select("router", F.pmod(F.hash("router"), F.lit(2)).alias("shard"))
                  .distinct().toPandas().itertuples(index=False, name=None))
    chunked = shards[readings["router"].iloc[0]]
    quiet = [r for r in candidates["router"] if shards[r] == chunked]
    quiet += [r for r in candidates["router"] if shards[r] != chunked][:64]  # the other shard
    assert len(quiet) > SPLIT_AT + 64
    rng = np.random.default_rng(12)
    start, span = readings["time"].min(), readings["time"].max() - readings["time"].min()
    readings = pd.concat([readings, pd.DataFrame({
        "router": np.repeat(quiet, 3),
        "time": start + span * np.sort(rng.random(3 * len(quiet))),
        "loss_rate": rng.random(3 * len(quiet)) * 0.006,
    })], ignore_index=True).sort_values("time", kind="stable", ignore_index=True)
    readings = readings.astype({"time": "datetime64[us, UTC]"})
    for k, part in enumerate(_split(readings, N_FILES)):
        path = folder / f"part-{k:02d}.parquet"
        part.to_parquet(path, index=False)
        os.utime(path, (1_000_000 + k, 1_000_000 + k))  # the file source reads in mtime order
    return folder


def _split(df: pd.DataFrame, n: int) -> list[pd.DataFrame]:
    size = -(-len(df) // n)
    return [df.iloc[i:i + size] for i in range(0, len(df), size)]


#: Each technique's streaming command (its descriptor's ``stream_example``): its own arguments
#: and the outputs it writes.
COMMANDS = {t.name: (list(t.stream_example.args), t.stream_example.outputs)
            for t in TECHNIQUES if t.stream_example is not None}


def command(name, input_dir, run_dir, stream: bool = True, master: str | None = "local[2]",
            files_per_trigger: int = 1) -> list[str]:
    """The command line; ``master=None`` leaves windowkit's default master."""
    own, _ = COMMANDS[name]
    streaming = ["--stream", "--checkpoint", str(run_dir / "ck"), "--late", "5 minutes",
                 "--max-files-per-trigger", str(files_per_trigger)]
    return [sys.executable, "-m", "windowkit.cli", *own, "--input", str(input_dir),
            "--time", "time", "--by", "router", *(streaming if stream else []),
            "--output", str(run_dir / "out"), "--shards", "2",
            *(["--master", master] if master else [])]


def start(name, input_dir, run_dir, env_extra=None, **options) -> subprocess.Popen:
    env = {**os.environ, **(env_extra or {})}
    if options.get("master", "given") is None:
        env.pop("WINDOWKIT_MASTER", None)  # windowkit's own default
    # its own process group: kill -9 reaches the driver's Python, its JVM and the workers
    return subprocess.Popen(command(name, input_dir, run_dir, **options), env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def run_to_end(name, input_dir, run_dir, env_extra=None, **options) -> int:
    proc = start(name, input_dir, run_dir, env_extra, **options)
    proc.communicate(timeout=600)
    return proc.returncode


def run_here(name, input_dir, run_dir, **options) -> int:
    """The command run to its end in this process, on the suite's session: the uninterrupted
    run that a killed one is compared with (a process of its own would add only a JVM start)."""
    from windowkit.cli import main

    return main(command(name, input_dir, run_dir, **{**options, "master": None})[3:])


def kill_after_micro_batches(name, input_dir, run_dir, n_batches: int,
                             rng: random.Random) -> None:
    """Start, wait for ``n_batches`` progress lines, sleep a random moment, kill -9."""
    proc = start(name, input_dir, run_dir)
    seen = 0
    for line in proc.stderr:
        seen += "micro-batch" in line
        if seen >= n_batches:
            break
    time.sleep(rng.uniform(0.0, 0.5))  # somewhere inside the next micro-batch, or after it
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def output_rows(run_dir, name: str) -> pd.DataFrame:
    df = pd.read_parquet(run_dir / "out" / name)  # pandas reads it: no half-written files
    df = df.drop(columns=["batch"], errors="ignore")  # a stream's micro-batch folders
    return df.sort_values(list(df.columns)).reset_index(drop=True)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_kill_9_and_restart_give_exactly_the_uninterrupted_rows(input_dir, tmp_path, name):
    outputs = COMMANDS[name][1]
    clean = tmp_path / "clean"
    assert run_here(name, input_dir, clean) == 0
    expected = {out: output_rows(clean, out) for out in outputs}
    assert len(expected[outputs[0]]) > 10

    crashed = tmp_path / "crashed"
    rng = random.Random(int(os.environ.get("WINDOWKIT_CRASH_SEED", "0")) or None)
    # 1. killed at a random moment after the first micro-batch
    kill_after_micro_batches(name, input_dir, crashed, 1, rng)
    # 2. killed by itself after writing the first micro-batch it runs and before Spark records
    #    its commit: the restart replays that batch, which must not be written twice
    code = run_to_end(name, input_dir, crashed, {KILL_AFTER_WRITE_ENV: "first"})
    assert code == -signal.SIGKILL
    # 3. the restart runs to the end
    assert run_to_end(name, input_dir, crashed) == 0
    for out in outputs:
        pd.testing.assert_frame_equal(output_rows(crashed, out), expected[out])


def busy_worker(proc: subprocess.Popen, marker, timeout: float = 300) -> psutil.Process:
    """The Python worker of ``proc``'s JVM that holds a windowkit task (its pid in
    ``marker/pid``, written by the task itself), once there is one."""
    path = marker / "pid"
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "no windowkit task started"
        time.sleep(0.2)
    worker = psutil.Process(int(path.read_text()))
    # a worker of this command (not of another Spark on the machine), forked by the daemon
    assert proc.pid in [p.pid for p in worker.parents()]
    assert any("pyspark.worker" in part or "daemon" in part for part in worker.cmdline())
    return worker


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "micro-batch"])
def test_kill_9_of_a_busy_python_worker_is_retried_with_the_same_rows(input_dir, tmp_path,
                                                                      stream):
    # Spark retries a failed task only if the job allows it: in local mode ``local[N, F]`` (F
    # attempts per task; ``spark.task.maxFailures`` is not read there), on a cluster by
    # default. windowkit's default master (no --master, no WINDOWKIT_MASTER) is of that form.
    clean, killed, marker = tmp_path / "clean", tmp_path / "killed", tmp_path / "marker"
    marker.mkdir()
    # two micro-batches: the first one's stateful step is killed
    options = {"stream": stream, "master": None, "files_per_trigger": N_FILES // 2}
    assert run_here("frames", input_dir, clean, **options) == 0
    expected = {out: output_rows(clean, out) for out in COMMANDS["frames"][1]}
    assert len(expected["frames"]) > 10

    proc = start("frames", input_dir, killed, {WORKER_MARKER_ENV: str(marker)}, **options)
    worker = busy_worker(proc, marker)
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=60)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    for out, rows in expected.items():
        pd.testing.assert_frame_equal(output_rows(killed, out), rows)


def test_only_the_first_task_waits_to_be_killed(tmp_path, monkeypatch):
    # The claim used to be the pid file's temporary name, renamed away once written: the next
    # task (the other shard's, or the killed one's retry) claimed again and slept WAIT_S, and
    # the kill tests above took minutes.
    from windowkit.spark import kill_hooks

    slept = []
    monkeypatch.setenv(WORKER_MARKER_ENV, str(tmp_path))
    monkeypatch.setattr(kill_hooks.time, "sleep", slept.append)
    assert [kill_hooks.wait_to_be_killed() for _ in range(3)] == [True, False, False]
    assert slept == [kill_hooks.WAIT_S]
    assert (tmp_path / "pid").read_text() == str(os.getpid())
