"""``windowkit multigranular`` writes what ``multi_granular`` gives: reports with distinct
counts, recurring items, rejected rows."""

from __future__ import annotations

import pandas as pd
import pytest

from windowkit.cli import main

pytestmark = pytest.mark.spark

WINDOW = "RANGES 10 MINUTES, 1 MINUTE SLIDES 1 MINUTE, 30 SECONDS"


def test_cli_reports_equal_the_api_and_set_bad_rows_aside(spark, tmp_path):
    from windowkit.spark import multi_granular, split_rejected

    lines = ["src,ts,bytes,dst"]
    for i in range(40):
        lines.append(f"s{i % 2},2024-01-01 00:{i // 4:02d}:{(i % 4) * 15:02d},{i * 10},d{i % 3}")
    lines += ["s0,2024-01-01 00:03:00,not-a-number,d1", "s1,never,5,d0"]
    (tmp_path / "flows.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    assert main(["multigranular", "--input", str(tmp_path / "flows.csv"), "--time", "ts",
                 "--by", "src", "--value", "bytes", "--window", WINDOW,
                 "--aggregates", "count,sum,max", "--recurring", "dst", "--distinct", "dst",
                 "--output", str(out)]) == 0
    got = pd.read_parquet(out / "reports")
    df = spark.read.option("header", "true").option("inferSchema", "true").csv(
        str(tmp_path / "flows.csv"))
    want, _ = split_rejected(multi_granular(df, "ts", WINDOW, by="src", value="bytes",
                                           aggregates=["count", "sum", "max"], distinct="dst"))
    want = want.toPandas()
    key = ["src", "level", "window_end"]
    columns = [*key, "count", "sum", "max", "distinct_dst"]
    pd.testing.assert_frame_equal(
        got[columns].sort_values(key).reset_index(drop=True),
        want[columns].sort_values(key).reset_index(drop=True), check_dtype=False)
    assert len(got) > 10
    assert set(got["distinct_dst"]) == {1, 2, 3}  # d0, d1, d2 take turns
    assert len(pd.read_parquet(out / "rejected")) == 2  # the bad number and the bad time
    assert len(pd.read_parquet(out / "recurring")) > 0


def test_cli_refuses_a_bad_distinct_precision_before_spark_starts(capsys):
    code = main(["multigranular", "--input", "nowhere.csv", "--time", "t", "--by", "s",
                 "--distinct", "d", "--distinct-precision", "30", "--output", "o",
                 "--aggregates", "count", "--window", "RANGES 1 MINUTE SLIDES 1 SECOND"])
    assert code == 2
    assert "`--distinct-precision` must be an integer in [4, 21]; got 30" in capsys.readouterr().out


def test_cli_reads_integer_nanoseconds_with_time_unit_ns(spark, tmp_path):
    from windowkit.spark import multi_granular, split_rejected

    lines = ["src,ns,bytes"] + [f"s{i % 2},{1_704_067_200 * 10**9 + i * 15 * 10**9},{i}"
                                for i in range(12)]
    (tmp_path / "flows.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    assert main(["multigranular", "--input", str(tmp_path / "flows.csv"), "--time", "ns",
                 "--time-unit", "ns", "--by", "src", "--value", "bytes", "--window", WINDOW,
                 "--aggregates", "count,sum", "--output", str(out)]) == 0
    got = pd.read_parquet(out / "reports")
    df = spark.read.option("header", "true").option("inferSchema", "true").csv(
        str(tmp_path / "flows.csv"))
    want, _ = split_rejected(multi_granular(df, "ns", WINDOW, by="src", value="bytes",
                                           aggregates=["count", "sum"], time_unit="ns"))
    key = ["src", "level", "window_end"]
    columns = [*key, "count", "sum"]
    pd.testing.assert_frame_equal(
        got[columns].sort_values(key).reset_index(drop=True),
        want.toPandas()[columns].sort_values(key).reset_index(drop=True))
    assert got["window_end"].dtype == "int64" and len(got) > 4
