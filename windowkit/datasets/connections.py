"""Synthetic TCP-like connection records, in the spirit of the LBL traces of the paper.

The paper (Patroumpas & Sellis, section V) used LBL-CONN-7 wide-area TCP connection traces,
which cannot be downloaded here. This generator produces records with the same fields (time,
source, destination, protocol, duration, bytes) and the features the multi-granular operations
look for: a steady background at a configurable rate with heavy-tailed sources, bursts (one
source hitting many destinations, as in a DoS or a port scan) and a few sources that recur at
different paces (every few seconds, minutes, ...). Everything is vectorized and seeded, so tests
use thousands of rows and benchmarks millions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from windowkit.core.validation import check_in_range, check_int

PROTOCOLS = ("http", "smtp", "ftp", "telnet", "nntp", "finger")
_PROTOCOL_WEIGHTS = np.array([0.55, 0.2, 0.1, 0.07, 0.05, 0.03])


@dataclass(frozen=True)
class Burst:
    """A burst: ``source`` opens ``factor * rate`` connections per second to random
    destinations during ``[start, start + length)`` seconds.

    Examples
    --------
    >>> Burst(start=10.0, length=5.0, factor=3.0, source=-1).source
    -1
    """

    start: float
    length: float
    factor: float
    source: int


def connection_records(
    duration: float = 60.0,
    rate: float = 1_000.0,
    n_sources: int = 1_000,
    n_destinations: int = 5_000,
    bursts: int | list[Burst] = 2,
    recurring_every: tuple[float, ...] = (5.0, 60.0, 600.0),
    start: int = 1_700_000_000_000_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Connection records over ``duration`` seconds at about ``rate`` rows per second.

    Parameters
    ----------
    duration : float
        Seconds of traffic.
    rate : float
        Background connections per second (Poisson).
    n_sources, n_destinations : int
        Source and destination ids ``0..n-1``; sources are Zipf-like (a few are busy).
    bursts : int or list of Burst
        Random bursts (that many; each 1-10 % of the duration, 2-10 times the rate, from a busy
        source) or explicit ones.
    recurring_every : tuple of float
        One extra source per entry (ids ``n_sources, n_sources + 1, ...``) that connects once
        every that many seconds (jittered by up to 10 %).
    start : int
        Time of the first instant, µs since the epoch.
    seed : int
        Random seed.

    Returns
    -------
    pandas.DataFrame
        ``time`` (int64 µs, sorted), ``source`` and ``destination`` (int64), ``protocol``
        (str), ``duration`` (float seconds), ``bytes`` (int64).

    Examples
    --------
    >>> df = connection_records(duration=10, rate=100, seed=1)
    >>> list(df.columns)
    ['time', 'source', 'destination', 'protocol', 'duration', 'bytes']
    >>> bool(df["time"].is_monotonic_increasing), 900 < len(df) < 3000
    (True, True)
    >>> int((df["source"] == 1000).sum())  # the source recurring every 5 seconds
    2
    """
    check_in_range("duration", duration, 0, np.inf, low_open=True)
    check_in_range("rate", rate, 0, np.inf)
    check_int("n_sources", n_sources, 1)
    check_int("n_destinations", n_destinations, 1)
    rng = np.random.default_rng(seed)
    span = int(duration * 1_000_000)
    parts = []

    n = rng.poisson(rate * duration)
    ranks = np.arange(1, n_sources + 1, dtype=np.float64)
    weights = 1.0 / ranks
    parts.append((rng.integers(0, span, n),
                  rng.choice(n_sources, n, p=weights / weights.sum()),
                  rng.integers(0, n_destinations, n)))

    if isinstance(bursts, int):
        check_int("bursts", bursts, 0)
        bursts = [Burst(start=float(rng.uniform(0, duration * 0.9)),
                        length=float(rng.uniform(0.01, 0.1) * duration),
                        factor=float(rng.uniform(2, 10)),
                        source=int(rng.integers(0, min(n_sources, 10))))
                  for _ in range(bursts)]
    for b in bursts:
        m = rng.poisson(b.factor * rate * b.length)
        lo = int(b.start * 1_000_000)
        hi = min(span, lo + max(1, int(b.length * 1_000_000)))
        if hi <= lo:
            continue
        parts.append((rng.integers(lo, hi, m), np.full(m, b.source),
                      rng.integers(0, n_destinations, m)))

    for i, every in enumerate(recurring_every):
        check_in_range(f"recurring_every[{i}]", every, 0, np.inf, low_open=True)
        base = np.arange(every / 2, duration, every)
        jitter = rng.uniform(-0.1, 0.1, len(base)) * every
        times = np.clip(((base + jitter) * 1_000_000).astype(np.int64), 0, span - 1)
        parts.append((times, np.full(len(times), n_sources + i),
                      rng.integers(0, n_destinations, len(times))))

    time = np.concatenate([p[0] for p in parts]).astype(np.int64)
    source = np.concatenate([p[1] for p in parts]).astype(np.int64)
    destination = np.concatenate([p[2] for p in parts]).astype(np.int64)
    order = np.argsort(time, kind="stable")
    total = len(time)
    protocol = np.asarray(PROTOCOLS, dtype=object)[
        rng.choice(len(PROTOCOLS), total, p=_PROTOCOL_WEIGHTS)]
    return pd.DataFrame({
        "time": start + time[order],
        "source": source[order],
        "destination": destination[order],
        "protocol": protocol,
        "duration": np.round(rng.lognormal(0.0, 1.5, total), 3),
        "bytes": rng.lognormal(7.0, 2.0, total).astype(np.int64),
    })
