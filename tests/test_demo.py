"""The shipped network-day pipeline, run by ``windowkit demo`` on the small day, finds every
injected case (and a fixed window finds no shell), and writes its report."""

from __future__ import annotations

import io
import os
import re
from contextlib import redirect_stdout

import pandas as pd
import pytest

from windowkit.cli import main
from windowkit.datasets.network_day import SMALL_DAY, network_day
from windowkit.datasets.network_day_score import read_step

STEPS = ("loss_frames", "loss_bgp", "traffic_levels", "dst_sketch", "heavy_destinations",
         "persistent_sources", "shells", "shells_fixed_window")
CHURN = ("WITHDRAW", "UPDATE")


@pytest.fixture(scope="module")
def demo(spark, tmp_path_factory):
    """The demo's printout, its results folder and the day it generated (the small day)."""
    folder = tmp_path_factory.mktemp("demo") / "demo"
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["demo", "--size", "small", "--seed", str(SMALL_DAY["seed"]),
                     "--output", str(folder)])
    assert code == 0, out.getvalue()
    return out.getvalue(), folder / "results", network_day(**SMALL_DAY)


pytestmark = pytest.mark.spark


def test_the_demo_finds_every_case_and_a_fixed_window_no_shell(demo):
    printed, _, _ = demo
    scores = {m.group(1): (int(m.group(2)), int(m.group(3)), int(m.group(4))) for m in
              re.finditer(r"^(\w+): (\d+) of (\d+) .* found, (\d+) false alarms?$", printed,
                          re.MULTILINE)}
    assert set(scores) == {"loss_frames", "traffic_levels", "heavy_destinations",
                           "persistent_sources", "shells", "shells_fixed_window"}
    for step, (found, expected, false) in scores.items():
        assert expected > 0, step
        assert false == 0, step
        assert found == (0 if step == "shells_fixed_window" else expected), step


def test_each_steps_rows_match_the_injected_cases(demo):
    _, results, day = demo
    out = {name: read_step(results, name) for name in STEPS}
    rejected = pd.read_parquet(results / "rejected") if os.listdir(results / "rejected") \
        else pd.DataFrame()
    assert len(rejected) == 0  # the generated day holds no bad row

    # loss frames: every incident with at least 3 reports from its first to its last present
    # one overlaps a final frame, and every frame lies on an incident
    frames = out["loss_frames"][out["loss_frames"]["status"] == "final"]
    inc = day.incidents
    spans = (inc["last_seen"] - inc["first_seen"]) / pd.Timedelta(seconds=30) + 1
    findable = inc[spans >= 3]
    assert len(findable) >= 3
    on = frames.merge(inc, on="router", suffixes=("", "_inc"))
    hit = on[(on["start"] < on["end_inc"]) & (on["start_inc"] < on["end"])]
    assert set(zip(findable["router"], findable["start"], strict=True)) <= set(
        zip(hit["router"], hit["start_inc"], strict=True))
    assert len(hit[["router", "frame_id"]].drop_duplicates()) == len(frames)

    # filled frames: most of each found incident's BGP burst is attached to its frame
    filled = out["loss_bgp"]
    churn = day.bgp[day.bgp["kind"].isin(CHURN)]
    found_incidents = set(zip(findable["router"], findable["start"], strict=True))
    for b, i in zip(day.bgp_bursts.itertuples(), inc.itertuples(), strict=True):
        if (i.router, i.start) not in found_incidents:
            continue
        burst = churn[(churn["router"] == b.router) & (churn["time"] >= b.start)
                      & (churn["time"] < b.end)]
        mine = filled[(filled["router"] == i.router) & (filled["start"] >= i.start)
                      & (filled["start"] < i.end) & filled["kind"].isin(CHURN)]
        attached = burst.merge(mine[["time", "kind", "prefix"]].drop_duplicates(),
                               on=["time", "kind", "prefix"])
        assert len(attached) > len(burst) / 2, (i.router, i.start)

    # multi-granular: the DoS source makes the busiest minute and the most destinations
    minute = out["traffic_levels"][out["traffic_levels"]["level"] == 0]
    dos = day.dos.iloc[0]
    for top in (minute.loc[minute["count"].idxmax()], minute.loc[minute["distinct_dst"].idxmax()]):
        assert top["src"] == dos.src
        assert top["window_start"] < dos.end and dos.start < top["window_end"]

    # heavy hitters: every heavy destination is reported
    assert set(day.heavy_destinations["dst"]) <= set(out["heavy_destinations"]["dst"])
    # persistent items: exactly the phone-home sources (background ones never come close)
    assert set(out["persistent_sources"]["src"]) == set(day.phone_home["src"])

    # widening finds each shell, with its first and last step; the fixed window finds none
    found = out["shells"].set_index("process")
    shells = day.shells.set_index("process")
    assert set(found.index) == set(shells.index)
    assert (found.loc[shells.index, "first_time"] == shells["start"]).all()
    assert (found.loc[shells.index, "last_time"] == shells["end"]).all()
    assert len(out["shells_fixed_window"]) == 0


def test_the_demo_writes_its_pipeline_and_report(demo):
    printed, results, _ = demo
    report = results / "report.html"
    assert report.is_file() and f"report:   {report}" in printed
    # the report's share of the demo's time (issue #38)
    share = re.search(r"written in ([\d.]+) s of the demo's ([\d.]+) s", printed)
    assert share is not None and 0 < float(share.group(1)) < float(share.group(2))
    html = report.read_text()
    for step in STEPS:
        assert os.path.isdir(results / step), step
        assert f">{step}<" in html, step
    assert "Periods of high packet loss per router" in html  # the step's description
    assert (results.parent / "network_day.toml").is_file()
    assert f"windowkit run {results.parent / 'network_day.toml'}" in printed


def test_the_demo_refuses_an_output_directory_holding_a_users_files(tmp_path):
    (tmp_path / "mine.txt").write_text("keep")
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["demo", "--size", "small", "--output", str(tmp_path)])
    assert code == 2
    assert "holds files windowkit did not write" in out.getvalue()
    assert (tmp_path / "mine.txt").read_text() == "keep"
