"""How many of a network day's injected cases a run of the demo pipeline found.

Reads the steps' rows as the run wrote them (``RESULTS/STEP``, Parquet, batch or streaming
layout) and compares them with the day's ground truth, case by case, with the rules of
``tests/test_network_day.py``: an incident is found when a final frame of its router overlaps
it, a heavy destination when it is reported, a phone-home source when it is reported
persistent, a remote shell when widening reports its process, and a fixed window finds a shell
the same way; a decoy reported is a false alarm.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pandas as pd

from windowkit.datasets.network_day import NetworkDay


@dataclass(frozen=True)
class Score:
    """One step's result against the truth: ``found`` of ``expected`` cases, ``false`` alarms.

    Examples
    --------
    >>> str(Score("shells", "remote shells", 4, 4, 0))
    'shells: 4 of 4 remote shells found, 0 false alarms'
    """

    step: str
    cases: str
    found: int
    expected: int
    false: int = 0

    def __str__(self) -> str:
        return (f"{self.step}: {self.found} of {self.expected} {self.cases} found, "
                f"{self.false} false alarm{'s' if self.false != 1 else ''}")


def read_step(results: str, step: str) -> pd.DataFrame:
    """A step's rows as written by a batch or streaming run, times in UTC."""
    path = os.path.join(results, step)
    frame = pd.read_parquet(path)
    frame = frame.drop(columns=["batch"], errors="ignore")
    for column in frame.columns:
        if pd.api.types.is_datetime64_any_dtype(frame[column]) and frame[column].dt.tz is None:
            frame[column] = frame[column].dt.tz_localize("UTC")
    return frame


def score_network_day(results: str, day: NetworkDay) -> list[Score]:
    """Score every step of the shipped demo pipeline found in ``results``.

    Examples
    --------
    >>> score_network_day("/no/such/results", None)
    []
    """
    scores = []
    for step, scorer in _SCORERS.items():
        if os.path.isdir(os.path.join(results, step)):
            scores.append(scorer(read_step(results, step), day))
    return scores


def _loss_frames(frames: pd.DataFrame, day: NetworkDay) -> Score:
    final = frames[frames["status"] == "final"]
    incidents = day.incidents
    span = (incidents["last_seen"] - incidents["first_seen"]) / pd.Timedelta(seconds=30) + 1
    findable = incidents[span >= 3]
    pairs = final.merge(incidents, on="router", suffixes=("", "_inc"))
    overlap = pairs[(pairs["start"] < pairs["end_inc"]) & (pairs["start_inc"] < pairs["end"])]
    hit = set(zip(overlap["router"], overlap["start_inc"], strict=True))
    found = sum((r, s) in hit for r, s in zip(findable["router"], findable["start"],
                                              strict=True))
    on_incident = len(overlap[["router", "frame_id"]].drop_duplicates())
    return Score("loss_frames", "loss incidents of 3+ reports", found, len(findable),
                 len(final) - on_incident)


def _heavy(reported: pd.DataFrame, day: NetworkDay) -> Score:
    truth = set(day.heavy_destinations["dst"])
    names = set(reported["dst"] if "dst" in reported else reported["item"])
    return Score("heavy_destinations", "heavy destinations", len(truth & names), len(truth),
                 0)


def _persistent(reported: pd.DataFrame, day: NetworkDay) -> Score:
    truth = set(day.phone_home["src"])
    names = set(reported["src"] if "src" in reported else reported["item"])
    return Score("persistent_sources", "phone-home sources", len(truth & names), len(truth),
                 len(names - truth))


def _shells(step: str):
    def score(found: pd.DataFrame, day: NetworkDay) -> Score:
        truth = set(day.shells["process"])
        decoys = set(day.decoys["process"])
        names = set(found["process"])
        return Score(step, "remote shells", len(truth & names), len(truth), len(names & decoys))

    return score


def _dos(levels: pd.DataFrame, day: NetworkDay) -> Score:
    minute = levels[levels["level"] == 0]
    found = 0
    if len(minute):
        top = minute.loc[minute["count"].idxmax()]
        found = sum(top["src"] == dos.src and top["window_start"] < dos.end
                    and dos.start < top["window_end"] for dos in day.dos.itertuples())
    return Score("traffic_levels", "DoS bursts (busiest 1-minute window)", found, len(day.dos))


_SCORERS = {"loss_frames": _loss_frames, "traffic_levels": _dos,
            "heavy_destinations": _heavy, "persistent_sources": _persistent,
            "shells": _shells("shells"), "shells_fixed_window": _shells("shells_fixed_window")}
