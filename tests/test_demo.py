"""The shipped network-day pipeline finds every injected case, and its report renders."""

from __future__ import annotations

import io
import os
import re
from contextlib import redirect_stdout

import pytest

from windowkit.cli import main

pytestmark = pytest.mark.spark


def test_the_demo_on_a_small_day_finds_every_case_and_writes_its_report(spark, tmp_path):
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["demo", "--size", "small", "--output", str(tmp_path / "demo")])
    printed = out.getvalue()
    assert code == 0, printed
    scores = {m.group(1): (int(m.group(2)), int(m.group(3)), int(m.group(4))) for m in
              re.finditer(r"^(\w+): (\d+) of (\d+) .* found, (\d+) false alarms?$", printed,
                          re.MULTILINE)}
    assert set(scores) == {"loss_frames", "traffic_levels", "heavy_destinations",
                           "persistent_sources", "shells", "shells_fixed_window"}
    for step, (found, expected, false) in scores.items():
        assert expected > 0, step
        assert false == 0, step
        if step == "shells_fixed_window":
            assert found == 0  # a fixed window misses shells spread over minutes
        else:
            assert found == expected, step
    results = tmp_path / "demo" / "results"
    report = results / "report.html"
    assert report.is_file() and f"report:   {report}" in printed
    html = report.read_text()
    for step in ("loss_frames", "loss_bgp", "traffic_levels", "dst_sketch",
                 "heavy_destinations", "persistent_sources", "shells", "shells_fixed_window"):
        assert os.path.isdir(results / step), step
        assert step in html, step
    assert (tmp_path / "demo" / "network_day.toml").is_file()


def test_the_demo_refuses_an_output_directory_holding_a_users_files(tmp_path):
    (tmp_path / "mine.txt").write_text("keep")
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["demo", "--size", "small", "--output", str(tmp_path)])
    assert code == 2
    assert "holds files windowkit did not write" in out.getvalue()
    assert (tmp_path / "mine.txt").read_text() == "keep"
