"""The report and the command line's figures show what a run found (issue #38): the burst of a
multi-granular step, frame labels that do not run together, honest captions, the run's whole
time, and a console sink without the adapter's columns or binary noise."""

from __future__ import annotations

import datetime as dt
import io
import re
import textwrap

import pandas as pd
import pytest

pytestmark = pytest.mark.spark

T0 = dt.datetime(2024, 1, 1)


def test_the_multi_granular_figure_shows_the_burst_over_the_whole_run_issue38(spark):
    from windowkit.report.model import StepRun
    from windowkit.report.multigranular import multi_granular_section
    from windowkit.spark import multi_granular, split_rejected

    # `steady` sends big flows all afternoon; `burst` sends 60 small ones in one minute
    rows = [("steady", T0 + dt.timedelta(minutes=m), 9000) for m in range(0, 240, 2)]
    rows += [("burst", T0 + dt.timedelta(hours=3, seconds=s), 60) for s in range(60)]
    flows = spark.createDataFrame(rows, "src string, time timestamp, bytes long")
    params = {"time": "time", "by": "src", "value": "bytes", "aggregates": ["count", "mean"],
              "window": "RANGES 10 MINUTES, 1 MINUTE SLIDES 5 MINUTES, 1 MINUTE"}
    reports, _ = split_rejected(multi_granular(flows, **params))
    section = multi_granular_section(StepRun("levels", "multi_granular", params,
                                             {"input": flows}, {"input": "flows"}, reports))
    caption = section.figure.caption
    assert "count of src = burst" in caption.replace("The count", "count")
    assert "over the whole run" in caption and "0 where the key has no report" in caption


def test_the_level_series_drop_to_zero_where_a_key_is_silent_issue38():
    from windowkit.report.multigranular import break_gaps

    points = pd.DataFrame({"t": [0, 60, 120, 600], "value": [3.0, 5.0, 4.0, 7.0]})
    filled = break_gaps(points, 60, silent=0.0)
    assert filled["value"].notna().all()
    assert filled.loc[filled["t"].between(121, 599), "value"].eq(0.0).all()


def test_frame_labels_never_overlap_on_a_row_issue38():
    from windowkit.report.fill import label_rows

    # frames 119 and 82 rows a hair apart: their labels go on different rows or not at all
    middles, widths = [10.0, 10.5, 11.0, 30.0], [2.0, 2.0, 2.0, 2.0]
    rows = label_rows(middles, widths)
    assert rows[0] != rows[1] and rows[3] == 0
    placed = [(m, w, r) for m, w, r in zip(middles, widths, rows, strict=True) if r is not None]
    for i, (m1, w1, r1) in enumerate(placed):
        for m2, w2, r2 in placed[i + 1:]:
            assert r1 != r2 or abs(m1 - m2) >= (w1 + w2) / 2


def test_the_persistence_caption_promises_blank_cells_only_when_there_are_some_issue38():
    from windowkit.report.persistent import blank_note

    everywhere = pd.DataFrame({"window_end_slot": [3, 4, 3, 4], "ip": ["a", "a", "b", "b"],
                               "estimate": [3.0, 4.0, 2.0, 4.0]})
    assert "blank" not in blank_note(everywhere, "ip", "estimate", 4)
    assert "blank" in blank_note(everywhere.iloc[:3], "ip", "estimate", 4)


def test_multigranular_plot_names_each_level_by_its_range_and_labels_its_axes_issue38(
        spark, tmp_path, monkeypatch):
    from windowkit.cli import main
    from windowkit.report import multigranular

    drawn = {}

    def record(ax, lines, ylabel, title):
        drawn.update(lines=list(lines), ylabel=ylabel)
        real(ax, lines, ylabel, title)
        drawn["axes"] = (ax.get_xlabel(), ax.get_ylabel())

    real = multigranular.draw_levels
    monkeypatch.setattr(multigranular, "draw_levels", record)
    lines = ["src,ts,bytes"] + [f"s{i % 2},2024-01-01 00:{i:02d}:00,{i}" for i in range(30)]
    (tmp_path / "flows.csv").write_text("\n".join(lines) + "\n")
    assert main(["multigranular", "--input", str(tmp_path / "flows.csv"), "--time", "ts",
                 "--by", "src", "--value", "bytes", "--output", str(tmp_path / "out"),
                 "--window", "RANGES 10 MINUTES, 2 MINUTES SLIDES 2 MINUTES, 1 MINUTE",
                 "--plot", str(tmp_path / "mg.png")]) == 0
    assert drawn["lines"] == ["2 min / 1 min", "10 min / 2 min"]
    assert drawn["axes"] == ("report time (window end)", "mean of bytes")
    assert (tmp_path / "mg.png").read_bytes()[:4] == b"\x89PNG"


PIPELINE = """\
[pipeline]
name = "cm"
output = "out"
report = ""

[sources.flows]
path = "flows.csv"
time = "time"

[steps.sketch]
function = "windowed_count_min"
input = "flows"
item = "dst"
unit = "ticks"
tick = "1 minute"
window = 60

[steps.heavy]
function = "heavy_hitters"
input = "sketch"
candidates = "flows"
item = "dst"
phi = 0.01
latest = true

[sinks.heavy_console]
step = "heavy"
format = "console"
"""


def test_the_console_sink_and_the_runs_time_issue38(spark, tmp_path, capsys):
    from windowkit.cli.common import Progress
    from windowkit.pipeline.runner import PipelineRun, check_pipeline_inputs
    from windowkit.pipeline.spec import load_pipeline

    # 301 connections in the hour: the threshold 0.01 x 301 is 3.01 (3.0100000000000002
    # in binary)
    rows = [(T0 + dt.timedelta(seconds=8 * i), "d0" if i % 4 == 0 else f"d{i % 90}")
            for i in range(301)]
    pd.DataFrame(rows, columns=["time", "dst"]).to_csv(tmp_path / "flows.csv", index=False)
    (tmp_path / "p.toml").write_text(textwrap.dedent(PIPELINE))
    pipeline = load_pipeline(str(tmp_path / "p.toml"))
    progress = Progress(stream=io.StringIO())
    progress.t0 -= 1000.0  # the command started (Spark and all) 1,000 s ago
    summary = PipelineRun(spark, pipeline, check_pipeline_inputs(pipeline),
                          progress=progress).run()
    assert summary.elapsed_s >= 1000.0
    shown = capsys.readouterr().out
    header = next(line for line in shown.splitlines() if "estimate" in line).split()
    assert "dst" in header and "view" not in header and "shard" not in header
    assert "3.01" in shown
    assert not re.search(r"\d\.\d*(0{6,}|9{6,})\d", shown), shown


def test_figures_are_drawn_one_at_a_time_while_sections_build_at_once_issue38():
    """Sections are built in threads and pyplot is not thread-safe: a figure waits until the
    one being drawn is saved."""
    import threading

    from windowkit.report.figures import drawn

    inside, release, second_in = threading.Event(), threading.Event(), threading.Event()

    @drawn
    def first() -> None:
        inside.set()
        assert release.wait(30)

    @drawn
    def second() -> None:
        second_in.set()

    one = threading.Thread(target=first)
    one.start()
    assert inside.wait(30)
    two = threading.Thread(target=second)
    two.start()
    assert not second_in.wait(0.5)  # still drawing the first
    release.set()
    one.join(30)
    two.join(30)
    assert second_in.is_set()


def test_a_long_series_gets_a_point_per_pixel_and_keeps_its_peak_issue38(spark):
    """A line of more rows than its figure has pixels across is reduced in Spark to at most a
    point per pixel, the highest value of each bucket kept (a burst stays visible)."""
    from pyspark.sql import functions as F

    from windowkit.report.collect import series
    from windowkit.report.figures import DPI, WIDTH

    n = 3 * int(WIDTH * DPI)
    df = spark.range(n).select(F.col("id").alias("t"),
                               F.when(F.col("id") == n // 2, 50.0).otherwise(1.0).alias("v"))
    out = series(df, F.col("t"), F.col("v"))
    assert len(out) <= WIDTH * DPI
    assert out["value"].max() == 50.0 and out["t"].is_monotonic_increasing
