"""``windowkit persistent`` (issue 4): the command end to end on tiny files."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from windowkit.cli import main

# ip a in slots 0, 1, 2 and b in slots 1, 3 (10-second slots)
SEEN = [("a", 1), ("a", 12), ("a", 14), ("b", 15), ("a", 21), ("b", 37)]
ARGS = ["--item", "ip", "--time", "t", "--slot", "10 seconds", "--window-slots", "4",
        "--alpha", "1.0", "--epsilon", "0.5"]


def write_csv(path) -> None:
    lines = ["ip,t"] + [f"{ip},2024-01-01 00:00:{s:02d}" for ip, s in SEEN]
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.spark
def test_batch_sketch_and_exact(spark, tmp_path, capsys):
    write_csv(tmp_path / "in.csv")
    out = tmp_path / "sketch"
    argv = ["persistent", "--input", str(tmp_path / "in.csv"), "--format", "csv", *ARGS]
    png = tmp_path / "top.png"
    assert main([*argv, "--output", str(out), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = spark.read.parquet(str(out / "persistent")).orderBy("window_end_slot", "ip").collect()
    first = 1_704_067_200 // 10  # 2024-01-01 00:00:00 in 10-second slots
    assert [(r.window_end_slot - first, r.ip, r.estimate, r.status) for r in rows] == [
        (1, "a", 3.0, "persistent"), (2, "a", 4.0, "persistent"),
        (3, "a", 4.0, "persistent"), (3, "b", 3.0, "persistent")]
    assert "4 persistent" in capsys.readouterr().err

    exact = tmp_path / "exact"
    assert main([*argv, "--exact", "--fixed", "--alpha", "0.5", "--output", str(exact)]) == 0
    found = spark.read.parquet(str(exact / "persistent"))
    rows = found.orderBy("ip").collect()
    assert [(r.window_end_slot - first, r.ip, r.estimate) for r in rows] == [
        (3, "a", 3.0), (3, "b", 2.0)]
    # --exact writes the sketch's schema (issue 16)
    assert found.schema == spark.read.parquet(str(out / "persistent")).schema


@pytest.mark.spark
def test_alpha_alone_works_and_rejected_rows_are_counted_issue16(spark, tmp_path, capsys):
    lines = ["ip,t"] + [f"{ip},2024-01-01 00:00:{s:02d}" for ip, s in SEEN] + [
        ",2024-01-01 00:00:05", "c,not-a-time"]
    (tmp_path / "in.csv").write_text("\n".join(lines) + "\n")
    argv = ["persistent", "--input", str(tmp_path / "in.csv"), "--item", "ip", "--time", "t",
            "--slot", "10 seconds", "--window-slots", "4", "--alpha", "0.1",
            "--output", str(tmp_path / "out")]
    assert main(argv) == 0  # epsilon defaults to alpha / 2: no "epsilon < alpha" error
    assert "2 malformed" in capsys.readouterr().err
    rejected = spark.read.parquet(str(tmp_path / "out" / "rejected")).collect()
    assert sorted(r.detail for r in rejected) == [
        '{"ip":"c","t":"not-a-time"}', '{"t":"2024-01-01 00:00:05"}']


@pytest.mark.spark
def test_stream_over_parquet_files(spark, tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    base = 1_704_067_200_000_000
    times = [base + s * 1_000_000 for _, s in SEEN] + [base + 3_600_000_000]  # closes slots
    table = pa.table({"ip": [ip for ip, _ in SEEN] + ["z"],
                      "t": pa.array(times, pa.timestamp("us", tz="UTC"))})
    pq.write_table(table, source / "part-0.parquet")
    out = tmp_path / "out"
    argv = ["persistent", "--input", str(source), *ARGS, "--stream", "--checkpoint",
            str(tmp_path / "ckpt"), "--output", str(out)]
    assert main(argv) == 0
    rows = spark.read.parquet(str(out / "persistent")).collect()
    assert sorted((r.window_end_slot - base // 10_000_000, r.ip) for r in rows) == [
        (1, "a"), (2, "a"), (3, "a"), (3, "b"), (4, "a"), (4, "b")]  # [2, 5] has a once


@pytest.mark.parametrize(("option", "value"), [
    ("--alpha", "1.5"), ("--epsilon", "0.9"), ("--window-slots", "0"), ("--slot", "3 rows"),
])
def test_bad_parameters_exit_2_before_spark(capsys, option, value):
    argv = ["persistent", "--input", "x", "--output", "y", "--item", "i", "--time", "t",
            option, value]
    assert main(argv) == 2
    assert f"`{option}`" in capsys.readouterr().out  # the option, not the Python parameter


def test_exact_refuses_streams(capsys):
    argv = ["persistent", "--input", "x", "--output", "y", "--item", "i", "--time", "t",
            "--exact", "--stream", "--checkpoint", "c"]
    assert main(argv) == 2
    assert "`--exact`" in capsys.readouterr().out


def test_plot_refuses_streams(capsys):
    argv = ["persistent", "--input", "x", "--output", "y", "--item", "i", "--time", "t",
            "--plot", "p.png", "--stream", "--checkpoint", "c"]
    assert main(argv) == 2
    assert "`--plot`" in capsys.readouterr().out


def test_plot_needs_at_least_one_item(capsys):
    argv = ["persistent", "--input", "x", "--output", "y", "--item", "i", "--time", "t",
            "--plot", "p.png", "--plot-items", "0"]
    assert main(argv) == 2
    assert "`--plot-items`" in capsys.readouterr().out
