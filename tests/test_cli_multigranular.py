"""``windowkit multigranular`` writes what ``multi_granular`` gives, and its recurring items."""

from __future__ import annotations

import pandas as pd
import pytest

from windowkit.cli import main

pytestmark = pytest.mark.spark

WINDOW = "RANGES 10 MINUTES, 1 MINUTE SLIDES 1 MINUTE, 30 SECONDS"


def test_cli_reports_equal_the_api_and_set_bad_rows_aside(spark, tmp_path):
    from windowkit.spark import multi_granular, split_reports

    lines = ["src,ts,bytes,dst"]
    for i in range(40):
        lines.append(f"s{i % 2},2024-01-01 00:{i // 4:02d}:{(i % 4) * 15:02d},{i * 10},d{i % 3}")
    lines += ["s0,2024-01-01 00:03:00,not-a-number,d1", "s1,never,5,d0"]
    (tmp_path / "flows.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    assert main(["multigranular", "--input", str(tmp_path / "flows.csv"), "--time", "ts",
                 "--by", "src", "--value", "bytes", "--window", WINDOW,
                 "--aggregates", "count,sum,max", "--recurring", "dst",
                 "--output", str(out)]) == 0
    got = pd.read_parquet(out / "reports")
    df = spark.read.option("header", "true").option("inferSchema", "true").csv(
        str(tmp_path / "flows.csv"))
    want, _ = split_reports(multi_granular(df, "ts", WINDOW, by="src", value="bytes",
                                           aggregates=["count", "sum", "max"]))
    want = want.toPandas()
    key = ["src", "level", "window_end"]
    columns = [*key, "count", "sum", "max"]
    pd.testing.assert_frame_equal(
        got[columns].sort_values(key).reset_index(drop=True),
        want[columns].sort_values(key).reset_index(drop=True), check_dtype=False)
    assert len(got) > 10
    assert len(pd.read_parquet(out / "rejected")) == 2  # the bad number and the bad time
    assert len(pd.read_parquet(out / "recurring")) > 0
