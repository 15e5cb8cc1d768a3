"""System-call data for progressive window widening: the recorded trace and the case study.

``load_trace`` reads ``data/remote_shell.strace``, a real ``strace -f -tt`` recording made on
this project's machine (benign commands and one real bind shell on 127.0.0.1; see
``data/README.md``). ``case_study`` builds the paper's section-5 experiment: a benign
system-call stream, one call per time unit, drawn from a first-order Markov model fitted to the
trace's processes (the bind shell's process left out), into which remote-shell episodes are
injected with their steps spread over durations from a few to ``10**5`` time units, each in a
process (key) of its own, together with near-miss decoys that must not be detected. The ground
truth lists every injected instance.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np
import pandas as pd

from windowkit.core.widening.syscalls import read_strace

DATA_DIR = Path(__file__).parent / "data"
TRACE = DATA_DIR / "remote_shell.strace"
FIELDS = ("call", "fd", "exe", "ret")
DECOY_KINDS = ("missing-dup", "other-fd", "wrong-order")

BENIGN_PID0 = 100_000  # benign processes get pids from here on; injected ones below
INJECTED_PID0 = 10_000


def load_trace(key: str = "pid") -> tuple[pd.DataFrame, pd.DataFrame]:
    """The shipped trace as rows and rejected lines (see :func:`read_strace`).

    Examples
    --------
    >>> rows, rejected = load_trace()
    >>> len(rows) > 2000, set(rejected["reason"]) == {"not a system call"}
    (True, True)
    >>> rows.loc[rows["call"] == "accept", "text"].tolist()
    ['accept fd=3 => 4']
    """
    with open(TRACE, encoding="utf-8") as f:
        return read_strace(f, key=key)


@dataclass(frozen=True)
class MarkovModel:
    """A first-order Markov chain over system-call events (tokens), per process.

    ``tokens`` holds one row per distinct event (``call``, ``fd``, ``exe``, ``ret``);
    ``start[i]`` is the probability a process starts with token i; ``step[i, j]`` that token j
    follows token i, with the last column the probability the process ends after i.
    """

    tokens: pd.DataFrame
    start: np.ndarray
    step: np.ndarray


def fit_markov(rows: pd.DataFrame) -> MarkovModel:
    """Fit the chain to a trace's processes, leaving out any process that calls ``accept``.

    Return values that are not small integers (addresses) are dropped from the tokens.

    Examples
    --------
    >>> model = fit_markov(load_trace()[0])
    >>> bool(np.allclose(model.step.sum(axis=1), 1)), "accept" in set(model.tokens["call"])
    (True, False)
    """
    rows = rows[~rows["key"].isin(rows.loc[rows["call"] == "accept", "key"])]
    ret = rows["ret"].where(rows["ret"].map(_small_int), None)
    table = pd.DataFrame({"call": rows["call"], "fd": rows.get("fd"), "exe": rows.get("exe"),
                          "ret": ret, "key": rows["key"]}).astype(object)
    table = table.where(table.notna(), None)
    codes, uniques = pd.factorize(pd.Series(list(zip(*(table[f] for f in FIELDS),
                                                     strict=True))))
    n = len(uniques)
    tokens = pd.DataFrame(list(uniques), columns=list(FIELDS))
    start = np.zeros(n)
    step = np.zeros((n, n + 1))
    for _, idx in table.groupby("key", sort=True).indices.items():
        seq = codes[np.sort(idx)]
        start[seq[0]] += 1
        np.add.at(step, (seq[:-1], seq[1:]), 1)
        step[seq[-1], n] += 1
    start /= start.sum()
    step /= np.maximum(step.sum(axis=1, keepdims=True), 1)
    step[step.sum(axis=1) == 0, n] = 1.0
    return MarkovModel(tokens, start, step)


def _small_int(value: object) -> bool:
    try:
        return value is not None and abs(int(str(value))) < 100_000
    except ValueError:
        return False


@dataclass(frozen=True)
class CaseStudy:
    """A case-study stream: ``events`` (``key``, ``time``, ``call``, ``fd``, ``exe``, ``ret``;
    sorted by time, one call per ``unit`` µs) and ``truth`` (one row per injected instance:
    ``instance``, ``kind`` (``"attack"`` or a decoy kind), ``key``, ``first_time``,
    ``last_time``, ``duration`` in µs, ``n_rows``)."""

    events: pd.DataFrame
    truth: pd.DataFrame
    unit: int


def case_study(
    n_events: int = 100_000,
    n_attacks: int = 40,
    n_decoys: int = 12,
    min_duration: int = 4,
    max_duration: int = 100_000,
    concurrency: int = 8,
    max_filler: int = 3,
    unit: int = 1_000_000,
    seed: int = 0,
    model: MarkovModel | None = None,
) -> CaseStudy:
    """Benign stream with injected remote-shell episodes and decoys (see the module docstring).

    Parameters
    ----------
    n_events : int
        Calls in the stream, one per time unit.
    n_attacks : int
        Remote-shell instances; their durations (first to last step, in time units) are spread
        log-uniformly over ``[min_duration, max_duration]`` (at least one unit per call of the
        instance).
    n_decoys : int
        Near misses in processes of their own, cycling through ``DECOY_KINDS``: a dup missing,
        dups of another descriptor, or the program run before the dups.
    concurrency : int
        Benign processes running at once; each call comes from one of them at random.
    max_filler : int
        An injected process also makes up to this many benign calls (neither accept, dup nor
        execve) between its steps.
    unit : int
        One time unit in µs.
    seed : int
        Seed of every random choice.
    model : MarkovModel, optional
        The benign model; default fitted to the shipped trace.

    Examples
    --------
    >>> cs = case_study(n_events=5_000, n_attacks=4, n_decoys=3, max_duration=1_000, seed=1)
    >>> len(cs.events), cs.truth["kind"].tolist()
    (5000, ['attack', 'attack', 'attack', 'attack', 'missing-dup', 'other-fd', 'wrong-order'])
    >>> bool(cs.events["time"].is_monotonic_increasing)
    True
    """
    if not 4 <= min_duration <= max_duration < n_events or max_filler < 0:
        msg = (f"need 4 <= min_duration <= max_duration < n_events and max_filler >= 0; got "
               f"min_duration={min_duration}, max_duration={max_duration}, "
               f"n_events={n_events}, max_filler={max_filler}")
        raise ValueError(msg)
    model = model or fit_markov(load_trace()[0])
    rng = np.random.default_rng(seed)
    pid_slot, token = _generate(n_events, concurrency, np.cumsum(model.start),
                                np.cumsum(model.step, axis=1), seed)
    pids = BENIGN_PID0 + pid_slot
    tokens = model.tokens.astype(object).to_numpy().tolist()
    filler = [i for i, t in enumerate(tokens) if t[0] not in ("accept", "dup", "execve")]
    taken = np.zeros(n_events, dtype=bool)
    truth = []
    kinds = ["attack"] * n_attacks + [DECOY_KINDS[i % 3] for i in range(n_decoys)]
    durations = np.exp(rng.uniform(np.log(min_duration), np.log(max_duration), len(kinds)))
    for i, kind in enumerate(kinds):
        steps = _instance_steps(kind, i, rng)
        middle = list(steps[1:-1])
        # filler calls go between the first and last step, the steps keeping their order
        for j in rng.choice(filler, rng.integers(0, max_filler + 1)):
            middle.insert(int(rng.integers(0, len(middle) + 1)), tokens[j])
        order = [steps[0], *middle, steps[-1]]
        slots = _free_slots(taken, len(order), int(durations[i]), rng)
        pid = INJECTED_PID0 + i
        for slot, event in zip(slots, order, strict=True):
            tokens.append(tuple(event))
            token[slot] = len(tokens) - 1
            pids[slot] = pid
        truth.append((i, kind, pid, int(slots[0]) * unit, int(slots[-1]) * unit,
                      int(slots[-1] - slots[0]) * unit, len(order)))
    table = pd.DataFrame(tokens, columns=list(FIELDS))
    events = pd.DataFrame({"key": pids.astype(np.int64),
                           "time": np.arange(n_events, dtype=np.int64) * unit})
    for field in FIELDS:
        codes, cats = pd.factorize(table[field], use_na_sentinel=True)
        events[field] = pd.Categorical.from_codes(codes[token], categories=cats)
    truth = pd.DataFrame(truth, columns=["instance", "kind", "key", "first_time", "last_time",
                                         "duration", "n_rows"])
    return CaseStudy(events, truth, unit)


def _instance_steps(kind: str, i: int, rng: np.random.Generator) -> list[tuple]:
    """An injected process's steps in stream order: accept, dups, execve (or a near miss)."""
    conn = str(1000 + i)  # descriptors no benign call uses
    exe = ["/bin/sh", "/bin/bash", "/usr/bin/python3"][i % 3]
    accept = ("accept", "3", None, conn)
    targets = list(rng.permutation(["0", "1", "2"]))
    dups = [("dup", conn, None, t) for t in targets]
    execve = ("execve", None, exe, "0")
    if kind == "missing-dup":
        dups = dups[:2]
    elif kind == "other-fd":
        dups = [("dup", str(2000 + i), None, t) for t in targets]
    elif kind == "wrong-order":
        return [accept, execve, *dups]
    return [accept, *dups, execve]


def _free_slots(taken: np.ndarray, count: int, duration: int,
                rng: np.random.Generator) -> np.ndarray:
    """``count`` free time slots, the first and last ``duration`` apart (redrawn on overlap)."""
    duration = max(duration, count - 1)
    for _ in range(1000):
        first = int(rng.integers(0, len(taken) - duration))
        inner = rng.choice(np.arange(first + 1, first + duration), count - 2, replace=False)
        slots = np.sort(np.concatenate([[first, first + duration], inner])).astype(np.int64)
        if not taken[slots].any():
            taken[slots] = True
            return slots
    msg = "could not place an injected instance: the stream is too full"
    raise ValueError(msg)


@numba.njit(cache=True)
def _generate(n_events, concurrency, start_cum, step_cum, seed):  # pragma: no cover - compiled
    """Interleave Markov processes: each call comes from one of ``concurrency`` running ones."""
    np.random.seed(seed)
    n_tokens = len(start_cum)
    state = np.full(concurrency, -1, dtype=np.int64)
    pid = np.arange(concurrency, dtype=np.int64)
    next_pid = concurrency
    out_pid = np.empty(n_events, dtype=np.int64)
    out_token = np.empty(n_events, dtype=np.int64)
    for t in range(n_events):
        j = np.random.randint(concurrency)
        s = state[j]
        if s >= 0:
            nxt = np.searchsorted(step_cum[s], np.random.random(), side="right")
            if nxt >= n_tokens:  # the process ended: a new one takes its place
                pid[j] = next_pid
                next_pid += 1
                s = -1
            else:
                s = nxt
        if s < 0:
            s = min(np.searchsorted(start_cum, np.random.random(), side="right"), n_tokens - 1)
        state[j] = s
        out_pid[t] = pid[j]
        out_token[t] = s
    return out_pid, out_token
