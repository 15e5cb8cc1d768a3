"""Every public function gives the same rows, and the same errors, on a Spark Connect session
as on a classic one (issue #35): the cases are in ``tests/session_kinds.py``."""

from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pytest

from tests.session_kinds import CASES, run_case

STREAM_CASES = sorted(name for name in CASES if name.endswith("_stream"))

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_cases(remote: str, out: str, names: list[str] | None = None) -> None:
    """Run the cases (default all) in a process of their own on the session ``remote``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "session_kinds.py"),
                           remote, out, *(names or [])], env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def connect_rows(connect_url, tmp_path_factory) -> str:
    """Run every case on a Spark Connect session (in a process of its own); the folder of
    their rows."""
    out = str(tmp_path_factory.mktemp("connect"))
    _run_cases(connect_url, out)
    return out


@pytest.fixture(scope="module")
def classic_stream_rows(tmp_path_factory) -> str:
    """Run the streaming cases on a classic session of a process of their own, as the
    Connect ones run: a stream's rows then depend on nothing the suite's own session went
    through before; the folder of their rows."""
    out = str(tmp_path_factory.mktemp("classic"))
    _run_cases("local[2]", out, STREAM_CASES)
    return out


def canonical(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows in one order, with one index: the same rows compare equal however Spark ordered
    them."""
    rows = rows.reset_index(drop=True)
    text = rows.map(lambda v: v.hex() if isinstance(v, bytes) else str(v))
    order = text.sort_values(list(rows.columns), kind="stable").index
    return rows.loc[order].reset_index(drop=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_connect_gives_the_classic_rows_issue35(spark, connect_rows, classic_stream_rows,
                                                tmp_path, name):
    if name in STREAM_CASES:
        classic = pd.read_parquet(os.path.join(classic_stream_rows, f"{name}.parquet"))
    else:
        classic = run_case(name, spark, str(tmp_path / "work"))
    connect = pd.read_parquet(os.path.join(connect_rows, f"{name}.parquet"))
    if name.startswith("error_"):
        assert list(classic.columns) == ["error"], classic.head()
    else:
        assert "error" not in classic.columns, classic["error"].iloc[0]
        assert len(classic) > 0
    # through Parquet as the Connect rows came, so both have Parquet's types
    classic_path = tmp_path / "classic.parquet"
    classic.to_parquet(classic_path)
    pd.testing.assert_frame_equal(canonical(pd.read_parquet(classic_path)), canonical(connect))


def test_a_session_without_rocksdb_gets_it_when_a_stateful_query_is_built_issue35(
        spark, tmp_path):
    from tests.session_kinds import readings, run_stream, stream_of
    from windowkit.spark import threshold_frames
    from windowkit.spark.session import ROCKSDB_PROVIDER

    key = "spark.sql.streaming.stateStore.providerClass"
    hdfs = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
    spark.conf.set(key, hdfs)  # Spark's default, as in a session windowkit did not build
    try:
        stream = stream_of(spark, readings(spark, n=30), str(tmp_path / "in"), parts=2)
        out = threshold_frames(stream, "time", "loss_rate > 0.003", by="router")
        assert spark.conf.get(key) == ROCKSDB_PROVIDER
        rows = run_stream(out, str(tmp_path))
    finally:
        spark.conf.set(key, ROCKSDB_PROVIDER)
    batch = threshold_frames(readings(spark, n=30), "time", "loss_rate > 0.003",
                             by="router").filter("status = 'final'").toPandas()
    final = rows[rows["status"] == "final"]
    # a stream's frames still open at its last watermark stay in state: the closed ones are
    # the batch's
    assert len(final) > 0
    assert set(zip(final["router"], final["start"], strict=True)) <= set(
        zip(batch["router"], batch["start"], strict=True))


def run_command(argv: list[str], remote: str | None = None) -> None:
    """``windowkit ARGV`` in this process (the suite's classic session), or on the Connect
    server ``remote`` from a process of its own."""
    from windowkit.cli import main

    if remote is None:
        assert main(argv) == 0
        return
    done = subprocess.run([sys.executable, "-m", "windowkit.cli", *argv, "--remote", remote],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_the_command_line_on_spark_connect_writes_the_classic_rows_issue35(
        spark, connect_url, tmp_path, stream):
    from tests.test_cli_frames import CSV

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "readings.csv").write_text(CSV)
    outputs = {}
    for kind, remote in (("classic", None), ("connect", connect_url)):
        out = tmp_path / kind
        extra = ["--stream", "--checkpoint", str(tmp_path / f"ck-{kind}"),
                 "--late", "0 seconds"] if stream else []
        run_command(["frames", "--input", str(tmp_path / "in"), "--format", "csv",
                     "--time", "ts", "--by", "router", "--when", "loss_rate > 0.003",
                     "--output", str(out), *extra], remote)
        outputs[kind] = [pd.read_parquet(out / part) for part in ("frames", "rejected")]
    for classic, connect in zip(outputs["classic"], outputs["connect"], strict=True):
        assert len(classic) > 0
        pd.testing.assert_frame_equal(canonical(classic), canonical(connect))
