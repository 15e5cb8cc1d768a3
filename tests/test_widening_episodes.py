"""The episode language and the compiled matcher against the brute-force definition.

Timeline notation in comments: one letter per event of the window, ``^`` under the rows of the
match reported.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkit.core.widening import REMOTE_SHELL, EpisodeDetector, parse_episode
from windowkit.reference.episodes import minimal_matches, occurrences

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

CALLS = ["a", "b", "c"]
VALUES = [None, "1", "2"]

events = st.fixed_dictionaries({
    "call": st.sampled_from(CALLS),
    "fd": st.sampled_from(VALUES),
    "ret": st.sampled_from(VALUES),
})

terms = st.sampled_from([None, "1", "2", "$x", "$y", "$_"])


@st.composite
def episodes(draw: st.DrawFn, max_steps: int = 4) -> str:
    """Episode text: 1..max_steps steps, grouped in order, with literals and variables."""
    n = draw(st.integers(1, max_steps))
    steps = []
    for _ in range(n):
        call = draw(st.sampled_from(CALLS))
        fd, ret = draw(terms), draw(terms)
        text = call + (f" fd={fd}" if fd else "") + (f" => {ret}" if ret else "")
        steps.append(text)
    lines, i = [], 0
    while i < n:
        size = draw(st.integers(1, n - i))
        group = steps[i: i + size]
        lines.append(group[0] if size == 1 else "{ " + " ; ".join(group) + " }")
        i += size
    return "\n".join(lines)


def frame(evs: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(evs, columns=["call", "fd", "ret"])


@SETTINGS
@given(text=episodes(), evs=st.lists(events, max_size=9))
def test_matcher_equals_brute_force(text, evs):
    detector = EpisodeDetector(text)
    got = detector.detect(detector.encode(frame(evs)))
    assert got == minimal_matches(text, evs)


@SETTINGS
@given(text=episodes(max_steps=3), evs=st.lists(events, max_size=14),
       cuts=st.lists(st.integers(0, 14), min_size=2, max_size=6))
def test_many_windows_in_one_call_equal_one_by_one(text, evs, cuts):
    detector = EpisodeDetector(text)
    rows = detector.encode(frame(evs))
    bounds = sorted(min(c, len(evs)) for c in cuts)
    starts, stops = np.array(bounds[:-1]), np.array(bounds[1:])
    index, matches = detector.detect_windows(rows, starts, stops)
    expected = [(i, m) for i, (a, b) in enumerate(zip(starts, stops, strict=True))
                for m in detector.detect(rows[a:b])]
    assert list(zip(index.tolist(), matches, strict=True)) == expected


@SETTINGS
@given(text=episodes())
def test_printed_episode_parses_back_to_itself(text):
    episode = parse_episode(text)
    assert parse_episode(str(episode)) == episode


def test_remote_shell_paper_example():
    # accept fd=5 => 6, dup fd=6 => 2, dup fd=6 => 1, dup fd=6 => 0, execve exe=sh (section 5)
    evs = [{"call": "accept", "fd": "5", "ret": "6"}, {"call": "dup", "fd": "6", "ret": "2"},
           {"call": "dup", "fd": "6", "ret": "1"}, {"call": "dup", "fd": "6", "ret": "0"},
           {"call": "execve", "exe": "sh"}]
    detector = EpisodeDetector("remote-shell")
    rows = detector.encode(pd.DataFrame(evs))
    # steps in written order: accept, dup=>0, dup=>1, dup=>2, execve
    assert detector.detect(rows) == [(0, 3, 2, 1, 4)]
    assert minimal_matches(REMOTE_SHELL, evs) == [(0, 3, 2, 1, 4)]


def test_variable_must_agree_and_others_interleave():
    # accept => 6, then dups of 7 (another descriptor): no match until dups of 6 come
    evs = [{"call": "accept", "fd": "5", "ret": "6"}]
    evs += [{"call": "dup", "fd": "7", "ret": r} for r in "012"]
    evs += [{"call": "read", "fd": "6", "ret": "3"}]
    evs += [{"call": "dup", "fd": "6", "ret": r} for r in "201"]
    evs += [{"call": "execve", "exe": "/bin/sh"}]
    detector = EpisodeDetector("remote-shell")
    assert detector.detect(detector.encode(pd.DataFrame(evs))) == [(0, 6, 7, 5, 8)]


def test_minimal_occurrences_by_hand():
    # a a b a b  -> minimal intervals [1,2] and [3,4]
    #   ^ ^ ^ ^
    evs = [{"call": c} for c in "aabab"]
    detector = EpisodeDetector("a\nb")
    assert detector.detect(detector.encode(pd.DataFrame(evs))) == [(1, 2), (3, 4)]
    # parallel: {a ; b} in b a: the rows in written step order are (1, 0)
    evs = [{"call": c} for c in "ba"]
    detector = EpisodeDetector("{ a ; b }")
    assert detector.detect(detector.encode(pd.DataFrame(evs))) == [(1, 0)]
    assert occurrences("{ a ; b }", evs) == [(1, 0)]


@pytest.mark.parametrize(("text", "line", "column", "what"), [
    ("accept fd=$x => $y\n{ dup fd=$y => 0 ; dup fd=$y => 1\nexecve", 3, 7,
     "expected '}' to close the group opened at line 2, column 1"),
    ("accept fd=$x =>", 1, 16, "expected a value after '=>'"),
    ("accept fd $x", 1, 11, "expected '=' after argument 'fd'"),
    ("dup fd=$y => 0\n  }", 2, 3, "'}' without a matching '{'"),
    ("{ a ; { b } }", 1, 7, "groups cannot be nested"),
    ("a\n{ }", 2, 1, "empty group"),
    ("a fd=$1x", 1, 6, "expected a variable name after '$'"),
    ("a exe=\"/bin/sh", 1, 7, "unterminated string"),
    ("a time=3", 1, 3, "argument name 'time' is reserved"),
    ("# nothing but a comment\n", 2, 1, "the episode has no step"),
    ("a => 1 2", 1, 8, "expected ';' or a new line after a step"),
])
def test_malformed_episode_names_line_and_column(text, line, column, what):
    with pytest.raises(ValueError, match=rf"episode line {line}, column {column}: "
                       rf"{_escape(what)}"):
        parse_episode(text)


def _escape(text: str) -> str:
    import re

    return re.escape(text)


def test_quoted_values_and_wildcards():
    episode = parse_episode('execve exe="/usr/bin/my sh" => $_  # comment')
    step = episode.steps[0]
    assert step.args[0][1].value == "/usr/bin/my sh"
    assert step.ret.kind == "any"
    detector = EpisodeDetector(episode)
    rows = detector.encode(pd.DataFrame({"call": ["execve", "execve"],
                                         "exe": ["/usr/bin/my sh", "/usr/bin/my sh"],
                                         "ret": [None, "0"]}))
    assert detector.detect(rows) == [(1,)]  # a wildcard needs a value to be present


def test_detector_rejects_badly_shaped_rows():
    detector = EpisodeDetector("a fd=1")
    with pytest.raises(ValueError, match="encoded rows must have 4 columns"):
        detector.detect(np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="needs a 'call' column"):
        detector.encode(pd.DataFrame({"fd": ["1"]}))
