"""``windowkit countmin`` (issue #16: point 7, and points 2-4 for this command)."""

from __future__ import annotations

import datetime as dt
import os
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from windowkit.cli import main

pytestmark = pytest.mark.spark


@pytest.fixture
def restore_session(spark):
    # the CLI's session builder reconfigures the shared session: restore it afterwards
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    yield spark
    spark.conf.set("spark.sql.shuffle.partitions", partitions)


def write_csv(path, text: str) -> str:
    with open(path, "w") as handle:
        handle.write(text)
    return str(path)


def test_checks_fail_in_one_line_before_spark_starts_issue16(tmp_path, capsys):
    good = write_csv(tmp_path / "in.csv", "ip,ts,router\n10.0.0.1,2026-01-01 00:00:00,r1\n")
    empty = write_csv(tmp_path / "empty.csv", "")
    odd = write_csv(tmp_path / "in.txt", "ip\n1\n")
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    a_file = write_csv(tmp_path / "file.out", "x")

    def args(**over):
        base = {"--input": good, "--output": str(tmp_path / "out"), "--item": "ip",
                "--window": "10"}
        base.update(over)
        return ["countmin", *[x for kv in base.items() for x in kv if x is not None]]

    cases = [
        (args(**{"--input": str(tmp_path / "missing.csv")}), "does not exist"),
        (args(**{"--input": empty}), "is empty"),
        (args(**{"--input": odd}), "cannot tell the format"),
        (args(**{"--item": "ipp"}), "`--item` names column 'ipp'.*did you mean 'ip'"),
        (args(**{"--time": "tss"}), "`--time` names column 'tss'"),
        (args(**{"--by": "ruter"}), "`--by` names column 'ruter'"),
        (args(**{"--shards": "0"}), r"`--shards` must be an integer in \[1, inf\); got 0"),
        (args(**{"--window": "-5"}), r"`--window` must be an integer in \[1, inf\); got -5"),
        (args(**{"--output": str(foreign)}), "holds files windowkit did not write"),
        (args(**{"--output": a_file}), "is a file; give a directory"),
        (args(**{"--unit": "ticks", "--tick": "1 day"}), "`--time` is required with `--unit"),
        (args(**{"--epsilon": "2"}), r"`--epsilon` must be in \(0, 1\); got 2.0"),
        (args(**{"--stream": None}), "`--checkpoint` is required with `--stream`"),
        # Spark's count_min_sketch, whose hash family the sketches share, takes an int seed
        (args(**{"--seed": "2147483648"}),
         r"`--seed` must be an integer in \[0, 2147483647\]; got 2147483648"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        printed = capsys.readouterr()
        lines = [line for line in printed.out.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("windowkit: error: "), (argv, printed)
        assert re.search(message, lines[0]), (argv, lines[0])
        assert "starting Spark" not in printed.err
    assert (foreign / "notes.txt").read_text() == "keep me"


def test_cli_defaults_for_time_windows_and_far_future_times_issue16(restore_session, tmp_path,
                                                                    capsys):
    # The CLI's defaults (splitter, default epsilon and delta, default cadence and shards) with
    # --unit ticks --tick "1 day": the old cadence snapshotted on every sample and overflowed
    # Arrow. A time in year 9999 is an ordinary time.
    base = pd.Timestamp("2026-03-01", tz="UTC")
    rng = np.random.default_rng(1)
    n = 3000
    pdf = pd.DataFrame({"ip": rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1]),
                        "ts": base + pd.to_timedelta(rng.integers(0, 20 * 86400, n), unit="s")})
    pdf.astype({"ts": "datetime64[us, UTC]"}).to_parquet(tmp_path / "in.parquet", index=False)
    out = tmp_path / "out"
    argv = ["countmin", "--input", str(tmp_path / "in.parquet"), "--output", str(out),
            "--item", "ip", "--time", "ts", "--unit", "ticks", "--tick", "1 day",
            "--window", "7"]
    assert main(argv) == 0
    estimates = pd.read_parquet(out / "estimates")
    est = estimates.set_index("ip")["estimate"]
    last = (pdf["ts"] - base).dt.days.max()
    # every estimate is of the same window: the 7 whole days up to the last row's (Spark's
    # Parquet timestamps read as UTC without a zone)
    utc_base = base.tz_localize(None)
    assert set(estimates["window_start"]) == {utc_base + pd.Timedelta(days=last - 6)}
    assert set(estimates["window_end"]) == {utc_base + pd.Timedelta(days=last + 1)}
    truth = pdf[(pdf["ts"] - base).dt.days > last - 7]["ip"].value_counts()
    for ip in "abc":  # Splitter approximates; the window is 7 days, not 20
        assert abs(est[ip] - truth[ip]) <= 0.1 * truth[ip] + 5, (ip, est[ip], truth[ip])
    assert "3,000 counted" in capsys.readouterr().out

    utc = dt.UTC
    future = pa.table({"ip": ["z", "z", "y"], "ts": pa.array(
        [dt.datetime(9999, 12, 30, 10, tzinfo=utc), dt.datetime(9999, 12, 31, 23, 59, tzinfo=utc),
         dt.datetime(2026, 1, 1, tzinfo=utc)], pa.timestamp("us", tz="UTC"))})
    pq.write_table(future, tmp_path / "far.parquet")
    assert main([*argv[:2], str(tmp_path / "far.parquet"), "--output", str(tmp_path / "far"),
                 *argv[5:]]) == 0
    far = pd.read_parquet(tmp_path / "far" / "estimates").set_index("ip")["estimate"]
    assert far.to_dict() == {"z": 2, "y": 0}


def test_every_row_is_counted_or_set_aside_with_its_reason_issue16(restore_session, tmp_path,
                                                                    capsys):
    text = ("ip,ts\n10.0.0.1,1\n10.0.0.1,2\n,3\n10.0.0.2,4\n10.0.0.1,\n10.0.0.1,5\n")
    path = write_csv(tmp_path / "in.csv", text)
    out = tmp_path / "out"
    argv = ["countmin", "--input", path, "--output", str(out), "--item", "ip", "--time", "ts",
            "--window", "100", "--algorithm", "perfect", "--shards", "2"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "6 read, 4 counted, 2 set aside (" in printed
    assert "1 null item" in printed and "1 no valid time" in printed
    rejected = pd.read_parquet(out / "rejected")
    assert sorted(rejected["reason"]) == ["no valid time", "null item"]
    est = pd.read_parquet(out / "estimates").set_index("ip")["estimate"]
    assert est.to_dict() == {"10.0.0.1": 3, "10.0.0.2": 1}
    assert os.path.exists(out / "_windowkit")
    assert main([*argv, "--heavy-hitters", "0.5"]) == 0  # windowkit's own output: rewritten
    hh = pd.read_parquet(out / "heavy_hitters")
    assert hh["ip"].tolist() == ["10.0.0.1"]


def test_same_estimates_whatever_the_shards_issue16(restore_session, tmp_path):
    # --window is the window of the whole stream: 1, 2 or 4 shards give the same estimates,
    # the counts of the last N items (Perfect), not N per shard.
    rng = np.random.default_rng(7)
    pdf = pd.DataFrame({"ip": rng.choice(list("abcdefgh"), 2000), "seq": np.arange(2000)})
    pdf.to_parquet(tmp_path / "in.parquet", index=False)
    truth = pdf.tail(300)["ip"].value_counts().sort_index()
    results = []
    for shards in (1, 2, 4):
        out = tmp_path / f"out{shards}"
        assert main(["countmin", "--input", str(tmp_path / "in.parquet"), "--output", str(out),
                     "--item", "ip", "--time", "seq", "--window", "300", "--algorithm",
                     "perfect", "--epsilon", "0.001", "--shards", str(shards)]) == 0
        est = pd.read_parquet(out / "estimates").set_index("ip")["estimate"].sort_index()
        results.append(est)
    for est in results:
        assert est.to_dict() == truth.to_dict()


def test_stream_with_checkpoint_writes_each_micro_batch_once_issue16(restore_session, tmp_path):
    from windowkit.spark.countmin import merge_count_min

    spark = restore_session
    folder = tmp_path / "in"
    folder.mkdir()
    rng = np.random.default_rng(3)
    for i in range(2):
        pd.DataFrame({"ip": rng.choice(list("abc"), 200),
                      "seq": np.arange(200 * i, 200 * (i + 1))}).to_parquet(
            folder / f"part-{i}.parquet", index=False)
    out, checkpoint = tmp_path / "out", tmp_path / "ckpt"
    argv = ["countmin", "--input", str(folder), "--output", str(out), "--item", "ip",
            "--time", "seq", "--window", "1000", "--algorithm", "perfect", "--stream",
            "--checkpoint", str(checkpoint), "--late", "0 seconds", "--shards", "2"]
    assert main(argv) == 0
    batches = sorted(os.listdir(out / "snapshots"))
    assert len([b for b in batches if b.startswith("batch=")]) >= 2
    assert main(argv) == 0  # restart from the checkpoint: nothing is processed or written again
    assert sorted(os.listdir(out / "snapshots")) == batches
    snaps = spark.read.parquet(str(out / "snapshots"))
    merged = merge_count_min(snaps.drop("batch")).first()
    assert merged["window_count"] == pytest.approx(400.0)  # every item ever seen is in N = 1000
