"""Brute-force episode matching, straight from the definition (a test oracle).

An occurrence of an episode in a window (a list of events) assigns each step a distinct
position such that every position of a group precedes every position of the next group, each
event has the step's call name, every argument the step names with the step's literal value
(compared as text) or the value its variable takes, the return value likewise, and each
variable takes one value throughout. The window reports, for every minimal interval (an
interval ``[first, last]`` of some occurrence that strictly contains no other occurrence's
interval), the occurrence with that interval whose positions in written step order are
lexicographically smallest. Every assignment is enumerated: use windows of a dozen events.
"""

from __future__ import annotations

import itertools
from typing import Any

from windowkit.core.widening.episode import Episode, Term, parse_episode


def event_value(event: dict[str, Any], name: str) -> str | None:
    """An event's argument (or ``"ret"``) as text; None if absent.

    Examples
    --------
    >>> event_value({"call": "dup", "fd": 5, "ret": None}, "fd"), event_value({}, "fd")
    ('5', None)
    """
    value = event.get(name)
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def occurrences(episode: Episode | str, events: list[dict[str, Any]]) -> list[tuple[int, ...]]:
    """Every occurrence, as positions in written step order.

    Examples
    --------
    >>> occurrences("a\\n{ b ; c }", [{"call": c} for c in "acbc"])
    [(0, 2, 1), (0, 2, 3)]
    """
    episode = parse_episode(episode) if isinstance(episode, str) else episode
    steps = episode.steps
    group_of = [g for g, grp in enumerate(episode.groups) for _ in grp]
    found = []
    for positions in itertools.product(range(len(events)), repeat=len(steps)):
        if len(set(positions)) != len(positions):
            continue
        ordered = all(positions[i] < positions[j] for i in range(len(steps))
                      for j in range(len(steps)) if group_of[i] < group_of[j])
        if ordered and _binds(steps, [events[p] for p in positions]):
            found.append(positions)
    return found


def _binds(steps, events) -> bool:
    binding: dict[str, str] = {}
    for step, event in zip(steps, events, strict=True):
        if event.get("call") != step.call:
            return False
        terms = list(step.args) + ([("ret", step.ret)] if step.ret is not None else [])
        for name, term in terms:
            if not _term_holds(term, event_value(event, name), binding):
                return False
    return True


def _term_holds(term: Term, value: str | None, binding: dict[str, str]) -> bool:
    if value is None:
        return False
    if term.kind == "const":
        return value == term.value
    if term.kind == "any":
        return True
    if term.value in binding:
        return binding[term.value] == value
    binding[term.value] = value
    return True


def minimal_matches(episode: Episode | str, events: list[dict[str, Any]]) -> list[tuple[int, ...]]:
    """The matches a window reports (see the module docstring), ordered by interval.

    Examples
    --------
    >>> minimal_matches("a\\nb", [{"call": c} for c in "aabab"])
    [(1, 2), (3, 4)]
    """
    occ = occurrences(episode, events)
    intervals = {(min(o), max(o)) for o in occ}
    minimal = [iv for iv in intervals
               if not any(o != iv and iv[0] <= o[0] and o[1] <= iv[1] for o in intervals)]
    return [min(o for o in occ if (min(o), max(o)) == iv) for iv in sorted(minimal)]
