"""Composite keys on the command line (``--by site,router``) and in pipeline files
(``key = ["site", "router"]``), issue #36 point 2: what they write equals the library's result
on the same rows, each key column under its own name and type, and a misspelt column of a
composite key is one line, exit code 2, before Spark starts."""

from __future__ import annotations

import io
import textwrap

import numpy as np
import pandas as pd
import pytest

from windowkit.cli import main
from windowkit.cli.common import Progress
from windowkit.pipeline.runner import PipelineRun, check_pipeline_inputs
from windowkit.pipeline.spec import load_pipeline
from windowkit.report import write_report

pytestmark = pytest.mark.spark

WINDOW = "RANGES 2 MINUTES, 1 MINUTE SLIDES 1 MINUTE, 30 SECONDS"


@pytest.fixture(scope="module")
def readings(tmp_path_factory):
    """Two sites whose routers share numbers (only the pair is a key), a reading every 10 s."""
    folder = tmp_path_factory.mktemp("keys")
    rng = np.random.default_rng(5)
    n = 240
    table = pd.DataFrame({
        "site": [f"s{i % 2}" for i in range(n)],
        "router": [(i // 2) % 3 for i in range(n)],
        "ts": pd.Timestamp("2024-01-01") + pd.to_timedelta(10 * (np.arange(n) // 6), unit="s"),
        "loss_rate": rng.uniform(0, 0.006, n).round(5)})
    path = folder / "readings.csv"
    table.to_csv(path, index=False)
    return path


def _read(spark, path):
    return spark.read.option("header", "true").option("inferSchema", "true").csv(str(path))


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values(list(df.columns), key=lambda s: s.astype(str)).reset_index(drop=True)


def test_frames_by_site_and_router_writes_the_librarys_frames_issue36(spark, readings,
                                                                       tmp_path):
    from windowkit.spark import split_rejected, threshold_frames

    out = tmp_path / "out"
    assert main(["frames", "--input", str(readings), "--time", "ts", "--by", "site,router",
                 "--when", "loss_rate > 0.003", "--min-duration", "2 rows",
                 "--output", str(out)]) == 0
    got = pd.read_parquet(out / "frames")
    assert list(got.columns[:2]) == ["site", "router"]
    want, _ = split_rejected(threshold_frames(_read(spark, readings), "ts", "loss_rate > 0.003",
                                              by=["site", "router"], min_duration="2 rows"))
    want = want.toPandas()
    assert got.groupby(["site", "router"]).ngroups == 6
    pd.testing.assert_frame_equal(_sorted(got[want.columns]), _sorted(want), check_dtype=False)


def test_multigranular_by_site_and_router_writes_the_librarys_reports_and_a_plot_issue36(
        spark, readings, tmp_path):
    from windowkit.spark import multi_granular, split_rejected

    out, png = tmp_path / "out", tmp_path / "levels.png"
    assert main(["multigranular", "--input", str(readings), "--time", "ts", "--by",
                 "site, router", "--value", "loss_rate", "--window", WINDOW, "--aggregates",
                 "count,max", "--output", str(out), "--plot", str(png)]) == 0
    got = pd.read_parquet(out / "reports")
    want, _ = split_rejected(multi_granular(_read(spark, readings), "ts", WINDOW,
                                            by=["site", "router"], value="loss_rate",
                                            aggregates=["count", "max"]))
    want = want.toPandas()
    assert list(got.columns[:2]) == ["site", "router"]
    columns = ["site", "router", "level", "window_end", "count", "max"]
    pd.testing.assert_frame_equal(_sorted(got[columns]), _sorted(want[columns]),
                                  check_dtype=False)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_a_misspelt_column_of_a_composite_key_is_one_line_before_spark_issue36(
        readings, tmp_path, capsys):
    code = main(["frames", "--input", str(readings), "--time", "ts", "--by", "site,ruter",
                 "--when", "loss_rate > 0.003", "--output", str(tmp_path / "o")])
    assert code == 2
    line = capsys.readouterr().out.strip()
    assert "`--by` names column 'ruter'" in line and "did you mean 'router'" in line
    assert "\n" not in line
    with pytest.raises(SystemExit) as exited:
        main(["frames", "--input", str(readings), "--time", "ts", "--by", "site,",
              "--when", "loss_rate > 0.003", "--output", str(tmp_path / "o")])
    assert exited.value.code == 2
    printed = capsys.readouterr()
    line = (printed.out + printed.err).strip()
    assert "a key is one column or several separated by commas" in line and "\n" not in line


PIPELINE = """\
[pipeline]
name = "sites"
output = "out"
report = "report.html"

[sources.readings]
path = "{path}"
time = "ts"
key = ["site", "router"]

[steps.hot]
function = "threshold_frames"
input = "readings"
when = "loss_rate > 0.003"
min_duration = "2 rows"

[steps.levels]
function = "multi_granular"
input = "readings"
window = "{window}"
value = "loss_rate"
aggregates = ["count", "max"]

[steps.by_site]
function = "multi_granular"
input = "readings"
by = ["site"]
window = "{window}"
aggregates = ["count"]
"""


def test_a_pipeline_with_a_composite_key_writes_the_librarys_rows_and_its_report_issue36(
        spark, readings, tmp_path):
    from windowkit.spark import multi_granular, split_rejected, threshold_frames

    path = tmp_path / "p.toml"
    path.write_text(textwrap.dedent(PIPELINE.format(path=readings, window=WINDOW)))
    pipeline = load_pipeline(str(path), output=str(tmp_path / "out"))
    summary = PipelineRun(spark, pipeline, check_pipeline_inputs(pipeline),
                          progress=Progress(stream=io.StringIO())).run()
    write_report(summary, str(tmp_path / "out" / "report.html"))
    df = _read(spark, readings)
    frames, _ = split_rejected(threshold_frames(df, "ts", "loss_rate > 0.003",
                                                by=["site", "router"], min_duration="2 rows"))
    levels, _ = split_rejected(multi_granular(df, "ts", WINDOW, by=["site", "router"],
                                              value="loss_rate", aggregates=["count", "max"]))
    by_site, _ = split_rejected(multi_granular(df, "ts", WINDOW, by="site",
                                               aggregates=["count"]))
    for name, want in [("hot", frames), ("levels", levels), ("by_site", by_site)]:
        got = pd.read_parquet(tmp_path / "out" / name)
        want = want.toPandas()
        columns = [c for c in want.columns if c not in ("shard", "range", "slide")]
        pd.testing.assert_frame_equal(_sorted(got[columns]), _sorted(want[columns]),
                                      check_dtype=False)
    report = (tmp_path / "out" / "report.html").read_text()
    assert "could not be built" not in report
    # each keyed figure names its key by both columns
    assert report.count("site, router = ") >= 2
