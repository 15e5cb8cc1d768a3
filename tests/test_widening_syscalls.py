"""System-call streams: the paper's line format, the strace converter on the shipped real trace,
and the case study (every injected remote shell found, no false alarm)."""

from __future__ import annotations

import pandas as pd
import pytest

from windowkit.core.widening import EpisodeDetector, WindowWidening
from windowkit.core.widening.syscalls import (
    format_syscall,
    parse_syscall_line,
    read_strace,
    read_syscalls,
)
from windowkit.datasets.syscalls import TRACE, case_study, fit_markov, load_trace

BIND_SHELL_PID = 11248


def _trace_lines() -> list[str]:
    with open(TRACE, encoding="utf-8") as f:
        return f.read().splitlines()


def test_strace_converter_on_real_lines_of_the_shipped_trace():
    lines = _trace_lines()
    picked = [ln for ln in lines if ln.startswith(f"{BIND_SHELL_PID} ") and any(
        f" {c}" in ln for c in ("accept4(", "<... accept4", "dup2(", 'execve("/bin/sh"'))]
    rows, rejected = read_strace(picked)
    assert rejected.empty
    assert rows["text"].tolist() == ["accept fd=3 => 4", "dup fd=4 => 0", "dup fd=4 => 1",
                                     "dup fd=4 => 2", "execve exe=/bin/sh => 0"]
    # the accept's time is its start, the <unfinished ...> line
    start = next(ln for ln in picked if "accept4(3," in ln)
    assert rows["time"].iloc[0] % 86_400_000_000 == _clock(start.split()[1])


def _clock(text: str) -> int:
    h, m, s = text.split(":")
    return (int(h) * 3600 + int(m) * 60) * 1_000_000 + round(float(s) * 1_000_000)


def test_every_trace_line_is_a_row_or_set_aside_with_a_reason():
    lines = _trace_lines()
    damaged = [*lines[:100], "11241 19:37:34.6 this is not strace output",
               "garbage without a clock", *lines[100:]]
    rows, rejected = read_strace(damaged)
    resumed = sum("resumed>" in ln for ln in damaged)
    assert len(rows) + len(rejected) + resumed == len(damaged)
    reasons = rejected["reason"].value_counts().to_dict()
    assert reasons.pop("not a system call") == sum(
        " --- " in ln or " +++ " in ln for ln in lines)
    assert sum(reasons.values()) == 2 and all(r.startswith("unparsable") for r in reasons)
    assert set(rejected.loc[rejected["reason"].str.startswith("unparsable"), "line_no"]) == {
        101, 102}


def test_the_real_bind_shell_of_the_trace_is_the_only_detection():
    rows, _ = load_trace()
    op = WindowWidening(EpisodeDetector("remote-shell"), base="1 ms", max_length=32,
                        max_duration="10 seconds")
    out = pd.concat([op.process(rows), op.finish()], ignore_index=True)
    assert out["key"].tolist() == [BIND_SHELL_PID]
    shell = rows[(rows["key"] == BIND_SHELL_PID)
                 & rows["call"].isin(["accept", "dup", "execve"])]
    shell = shell[shell["time"] >= shell.loc[shell["call"] == "accept", "time"].iloc[0]]
    assert sorted(map(int, out["times"].iloc[0].split(","))) == shell["time"].tolist()[:5]


def test_paper_lines_round_trip_through_the_printer():
    rows, _ = load_trace()
    texts = rows["text"].tolist()
    parsed, rejected = read_syscalls(texts)
    assert rejected.empty and len(parsed) == len(rows)
    again = [format_syscall(r) for r in parsed.to_dict(orient="records")]
    assert again == texts


@pytest.mark.parametrize(("line", "message"), [
    ("dup fd=5 =>", "column 10: expected a return value after '=>'"),
    ("dup fd 5", "column 5: expected name=value, got 'fd'"),
    ('execve exe="/bin/sh', "column 12: unterminated string"),
    ("=> 3", "column 1: expected a system call name"),
    ("accept fd=3 => 4 5", "column 18: unexpected '5' after the return value"),
])
def test_malformed_paper_lines_name_the_column(line, message):
    with pytest.raises(ValueError, match=message):
        parse_syscall_line(line)
    rows, rejected = read_syscalls(["accept fd=1 => 2", line])
    assert len(rows) == 1 and rejected["line_no"].tolist() == [2]


def test_host_key_puts_every_process_in_one_stream():
    rows, _ = read_strace(_trace_lines()[:50], key="host")
    assert set(rows["key"]) == {"host"} and rows["pid"].nunique() >= 1


def test_benign_model_leaves_the_bind_shell_out():
    model = fit_markov(load_trace()[0])
    assert "accept" not in set(model.tokens["call"])
    assert {"dup", "execve"} <= set(model.tokens["call"])  # benign dups and execs remain


def test_case_study_every_injected_shell_found_and_no_false_alarm():
    cs = case_study(n_events=60_000, n_attacks=12, n_decoys=6, max_duration=20_000, seed=7)
    unit = cs.unit
    op = WindowWidening(EpisodeDetector("remote-shell"), base=64 * unit, max_length=32,
                        max_duration=20_000 * unit)
    events = cs.events
    outputs = [op.process(events.iloc[i: i + 7_000]) for i in range(0, len(events), 7_000)]
    out = pd.concat([*outputs, op.finish()], ignore_index=True)
    attacks = cs.truth[cs.truth["kind"] == "attack"]
    assert sorted(out["key"]) == sorted(attacks["key"])  # each once; no decoy, no benign key
    merged = out.merge(attacks, on="key")
    assert (merged["first_time_x"] == merged["first_time_y"]).all()
    assert (merged["last_time_x"] == merged["last_time_y"]).all()
    assert (merged["detected_at"] > merged["last_time_y"]).all()
