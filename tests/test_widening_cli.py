"""``windowkit widen`` on the shipped strace trace: the bind shell found, bad input reported."""

from __future__ import annotations

import pandas as pd

from windowkit.cli import main
from windowkit.datasets.syscalls import TRACE

ARGS = ["widen", "--format", "strace", "--base", "1 ms", "--max-length", "32",
        "--max-duration", "10 seconds"]


def test_widen_finds_the_bind_shell_in_the_recorded_trace(tmp_path, capsys):
    assert main([*ARGS, "--input", str(TRACE), "--output", str(tmp_path)]) == 0
    found = pd.read_parquet(tmp_path / "detections")
    assert found["key"].tolist() == [11248]
    rejected = pd.read_parquet(tmp_path / "rejected")
    assert set(rejected["reason"]) == {"not a system call"}
    assert f"{len(rejected)} lines set aside" in capsys.readouterr().out


def test_unparsable_trace_lines_are_counted_and_kept(tmp_path, capsys):
    trace = tmp_path / "bad.strace"
    lines = TRACE.read_text().splitlines()
    trace.write_text("\n".join([*lines[:10], "not strace at all", *lines[10:20]]) + "\n")
    assert main([*ARGS, "--input", str(trace), "--output", str(tmp_path / "out")]) == 0
    rejected = pd.read_parquet(tmp_path / "out" / "rejected")
    assert rejected["line"].tolist() == ["not strace at all"]
    assert "1 unparsable" in capsys.readouterr().out


def test_malformed_episode_file_names_file_line_and_column(tmp_path, capsys):
    episode = tmp_path / "shell.episode"
    episode.write_text("accept fd=$x => $y\n{ dup fd=$y => 0 ; dup fd $y }\n")
    code = main([*ARGS, "--input", str(TRACE), "--episode", str(episode),
                 "--output", str(tmp_path / "out")])
    assert code == 2
    out = capsys.readouterr().out
    assert "shell.episode: episode line 2, column 27: expected '=' after argument 'fd'" in out
