"""A streaming pipeline run killed with kill -9 and restarted writes the uninterrupted rows.

The pipeline chains two streaming steps (frames, then the frames filled from a stored table),
so the restarts land in either step's queries, between a micro-batch's write and its commit
too; each step's output and the rejected rows must equal an uninterrupted run's, row for row.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from windowkit.datasets.routers import router_readings
from windowkit.spark.sinks import KILL_AFTER_WRITE_ENV

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PIPELINE = """\
[pipeline]
name = "crash"
output = "out"
report = ""
master = "local[2]"

[sources.routers]
path = "{parts}"
time = "time"
key = "router"
watermark = "5 minutes"

[sources.table]
path = "{table}"
time = "time"
key = "router"
stream = false

[steps.loss_frames]
function = "threshold_frames"
input = "routers"
when = "loss_rate > 0.003"
min_duration = "2 rows"
fragment_every = "4 rows"
shards = 2

[steps.around]
function = "fill_frames"
input = "loss_frames"
data = "table"
before = "2 minutes"
statuses = ["final", "partial"]
"""
STEPS = ("loss_frames", "around", "rejected")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pipeline_crash")
    readings = router_readings(n_routers=5, n_reports=200, seed=5, mean_gap=60)
    readings = readings.astype({"time": "datetime64[us, UTC]"})
    readings.to_parquet(folder / "table.parquet", index=False)
    parts = folder / "parts"
    parts.mkdir()
    size = -(-len(readings) // 3)
    for k, start in enumerate(range(0, len(readings), size)):
        path = parts / f"part-{k:02d}.parquet"
        readings.iloc[start:start + size].to_parquet(path, index=False)
        os.utime(path, (1_000_000 + k, 1_000_000 + k))  # the file source reads in mtime order
    # two malformed rows: set aside exactly once however often the run is restarted
    bad = readings.iloc[:2].assign(router=pd.array([None, None], dtype="string"))
    bad.to_parquet(parts / "part-99.parquet", index=False)
    os.utime(parts / "part-99.parquet", (1_000_100, 1_000_100))
    return folder


def pipeline_file(inputs, run_dir, master: bool = True) -> str:
    """The pipeline's file; without ``master`` it runs on the session already running."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "p.toml"
    text = PIPELINE.format(parts=inputs / "parts", table=inputs / "table.parquet")
    path.write_text(text if master else text.replace('master = "local[2]"\n', ""))
    return str(path)


def start(inputs, run_dir, env_extra=None) -> subprocess.Popen:
    env = {**os.environ, **(env_extra or {})}
    command = [sys.executable, "-m", "windowkit.cli", "run", pipeline_file(inputs, run_dir),
               "--stream"]
    # its own process group: kill -9 reaches the driver's Python, its JVM and the workers
    return subprocess.Popen(command, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def run_to_end(inputs, run_dir, env_extra=None) -> int:
    proc = start(inputs, run_dir, env_extra)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode in (0, -signal.SIGKILL), err[-2000:]
    return proc.returncode


def run_here(inputs, run_dir) -> int:
    """The pipeline run to its end in this process, on the suite's session: the uninterrupted
    run that a killed one is compared with (a process of its own would add only a JVM start)."""
    from windowkit.cli import main

    return main(["run", pipeline_file(inputs, run_dir, master=False), "--stream"])


def kill_after(inputs, run_dir, marker: str, count: int, rng: random.Random) -> None:
    """Start, wait for ``count`` progress lines holding ``marker``, then kill -9 a moment
    later."""
    proc = start(inputs, run_dir)
    seen = 0
    for line in proc.stderr:
        seen += marker in line
        if seen >= count:
            break
    time.sleep(rng.uniform(0.0, 0.5))
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def output_rows(run_dir, name: str) -> pd.DataFrame:
    df = pd.read_parquet(run_dir / "out" / name).drop(columns=["batch"])
    df = df.astype({c: str for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)})
    return df.sort_values(list(df.columns)).reset_index(drop=True)


def test_a_killed_streaming_pipeline_restarted_on_its_checkpoints_writes_the_same_rows(
        spark, inputs, tmp_path):
    clean = tmp_path / "clean"
    assert run_here(inputs, clean) == 0
    expected = {name: output_rows(clean, name) for name in STEPS}
    assert len(expected["loss_frames"]) > 5 and len(expected["around"]) > 5
    assert expected["rejected"]["reason"].tolist() == ["malformed", "malformed"]

    crashed = tmp_path / "crashed"
    rng = random.Random(int(os.environ.get("WINDOWKIT_CRASH_SEED", "0")) or None)
    # 1. killed by itself after writing the first micro-batch it runs, before Spark records
    #    its commit: the restart replays that batch, which must not be written twice
    assert run_to_end(inputs, crashed, {KILL_AFTER_WRITE_ENV: "first"}) == -signal.SIGKILL
    # 2. killed at a random moment in the second step, after the first step has caught up
    kill_after(inputs, crashed, "around micro-batch", 1, rng)
    # 3. the last restart runs to the end
    assert run_to_end(inputs, crashed) == 0
    for name in STEPS:
        pd.testing.assert_frame_equal(output_rows(crashed, name), expected[name])
