"""Synthetic router ``loss_rate`` reports: the frames paper's running example (appendix C).

Every router reports on a fixed schedule. Its baseline loss rate stays below the threshold
(roughly ``0.17x``–``0.5x`` of it, ``0.0005``–``0.0015`` for the default ``0.003``, with
multiplicative noise, capped at ``0.7x``); injected high-loss *incidents* of 2 to ~120 reports
lie strictly above it; incidents of a router are separated by at least two baseline reports.
A fraction of reports is absent, and a fraction of rows arrives late (event time unchanged).

Random draws come from independent child streams of ``numpy.random.SeedSequence(seed)``, so
:func:`router_incidents` recomputes the incidents without generating the readings.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd

from windowkit.core.durations import to_micros

_MIN_INCIDENT = 2
_MAX_INCIDENT = 120
_MIN_SEPARATION = 2
_MAX_LATE_REPORTS = 5


def _shape(
    duration: str | int | dt.timedelta, period: str | int | dt.timedelta, n_reports: int | None
) -> tuple[int, int]:
    """(period in microseconds, reports per router)."""
    period_us = to_micros(period, "period")
    if n_reports is None:
        n_reports = to_micros(duration, "duration") // period_us
    if n_reports < 1:
        msg = f"`n_reports` must be >= 1; got {n_reports!r}"
        raise ValueError(msg)
    return period_us, int(n_reports)


def _incident_table(
    rng: np.random.Generator, n_routers: int, n_reports: int, mean_gap: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(router, first report, length) of every incident, sorted by router then start."""
    lo, hi = np.log(_MIN_INCIDENT), np.log(_MAX_INCIDENT + 1)
    mean_cycle = mean_gap + _MIN_SEPARATION + (_MAX_INCIDENT - _MIN_INCIDENT) / (hi - lo)
    n_cycles = int(np.ceil(n_reports / mean_cycle * 1.5)) + 4
    while True:
        gaps = _MIN_SEPARATION + rng.geometric(1.0 / mean_gap, size=(n_routers, n_cycles)) - 1
        lengths = np.floor(np.exp(rng.uniform(lo, hi, size=(n_routers, n_cycles)))).astype(np.int64)
        lengths = np.clip(lengths, _MIN_INCIDENT, _MAX_INCIDENT)
        ends = np.cumsum(gaps + lengths, axis=1)
        if (ends[:, -1] >= n_reports).all():
            break
        n_cycles *= 2  # rare: draw again with more cycles (still deterministic for the seed)
    starts = ends - lengths
    # keep incidents followed by at least one baseline report, so each one closes in the data
    keep = ends <= n_reports - 1
    router = np.broadcast_to(np.arange(n_routers)[:, None], starts.shape)
    return router[keep], starts[keep], lengths[keep]


def _names(n_routers: int) -> np.ndarray:
    width = max(3, len(str(n_routers - 1)))
    return np.array([f"r{i:0{width}d}" for i in range(n_routers)], dtype=object)


def _timestamps(us: np.ndarray) -> pd.Series:
    return pd.Series(us.astype("datetime64[us]")).dt.tz_localize("UTC")


def router_readings(
    n_routers: int = 50,
    duration: str | int | dt.timedelta = "1 day",
    period: str | int | dt.timedelta = "30 seconds",
    missing_rate: float = 0.02,
    disorder_rate: float = 0.01,
    seed: int = 0,
    threshold: float = 0.003,
    n_reports: int | None = None,
    mean_gap: float = 400.0,
    start: str = "2024-01-01",
) -> pd.DataFrame:
    """Router loss-rate reports with injected high-loss incidents, absences and disorder.

    Parameters
    ----------
    n_routers : int
        Number of routers ``"r000"``, ``"r001"``, ...
    duration : str, int or timedelta
        Length of the run (ints are microseconds); ignored when ``n_reports`` is given.
    period : str, int or timedelta
        Reporting period.
    missing_rate : float
        Probability that a scheduled report is absent (independent per report).
    disorder_rate : float
        Fraction of the present rows that arrive late: each is moved after the rows of the next
        1 to 5 reporting periods (of all routers), so it is out of order within its own router.
    seed : int
        Seed; the output is a deterministic function of all the arguments.
    threshold : float
        Incidents are strictly above it, the baseline at most ``0.7 * threshold``.
    n_reports : int or None
        Scheduled reports per router (overrides ``duration``), e.g. 10,000 for benchmarks.
    mean_gap : float
        Mean number of baseline reports between two incidents of a router.
    start : str
        UTC time of the first report.

    Returns
    -------
    pandas.DataFrame
        Columns ``router`` (str), ``time`` (``datetime64[us, UTC]``), ``loss_rate`` (float64), in
        arrival order (time-major, with the late rows moved).

    Examples
    --------
    >>> df = router_readings(n_routers=3, duration="1 hour", seed=1)
    >>> list(df.columns), str(df["time"].dtype)
    (['router', 'time', 'loss_rate'], 'datetime64[us, UTC]')
    >>> sorted(df["router"].unique())
    ['r000', 'r001', 'r002']
    >>> len(df) <= 3 * 120
    True
    >>> df.equals(router_readings(n_routers=3, duration="1 hour", seed=1))
    True
    """
    period_us, n_rep = _shape(duration, period, n_reports)
    for name, rate in (("missing_rate", missing_rate), ("disorder_rate", disorder_rate)):
        if not 0 <= rate < 1:
            msg = f"`{name}` must be in [0, 1); got {rate!r}"
            raise ValueError(msg)
    if n_routers < 1:
        msg = f"`n_routers` must be >= 1; got {n_routers!r}"
        raise ValueError(msg)
    rng_inc, rng_base, rng_miss, rng_late = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)
    )
    router, inc_start, inc_len = _incident_table(rng_inc, n_routers, n_rep, mean_gap)

    # Baseline: a per-router level with multiplicative noise, capped well under the threshold.
    level = threshold * rng_base.uniform(1 / 6, 1 / 2, size=(n_routers, 1))
    loss = level * np.exp(rng_base.normal(0.0, 0.3, size=(n_routers, n_rep)))
    np.minimum(loss, 0.7 * threshold, out=loss)

    # Incidents: mark each incident's reports with its id, then give them its (high) level.
    n_inc = len(router)
    marks = np.zeros((n_routers, n_rep + 1), dtype=np.int64)
    ids = np.arange(1, n_inc + 1)
    np.add.at(marks, (router, inc_start), ids)
    np.add.at(marks, (router, inc_start + inc_len), -ids)
    incident_of = np.cumsum(marks, axis=1)[:, :n_rep]  # 0 outside, id inside (no overlaps)
    inside = incident_of > 0
    inc_level = threshold * np.exp(rng_base.uniform(np.log(1.3), np.log(10.0), size=n_inc + 1))
    high = inc_level[incident_of[inside]] * np.exp(rng_base.normal(0.0, 0.2, size=inside.sum()))
    loss[inside] = np.maximum(high, 1.05 * threshold)

    # Time-major flattening: all routers at report 0, then report 1, ...
    loss_flat = loss.T.ravel()
    step_flat = np.repeat(np.arange(n_rep, dtype=np.int64), n_routers)
    router_flat = np.tile(np.arange(n_routers, dtype=np.int64), n_rep)

    present = rng_miss.random(loss_flat.size) >= missing_rate
    loss_flat, step_flat, router_flat = loss_flat[present], step_flat[present], router_flat[present]

    order = _arrival_order(rng_late, step_flat, router_flat, n_routers, disorder_rate)
    start_us = pd.Timestamp(start, tz="UTC").value // 1_000
    return pd.DataFrame(
        {
            "router": _names(n_routers)[router_flat[order]],
            "time": _timestamps(start_us + step_flat[order] * period_us),
            "loss_rate": loss_flat[order],
        }
    )


def _arrival_order(
    rng: np.random.Generator,
    step: np.ndarray,
    router: np.ndarray,
    n_routers: int,
    disorder_rate: float,
) -> np.ndarray:
    """Row permutation that moves ``disorder_rate`` of the rows 1..5 periods later (O(n))."""
    n = step.size
    late = rng.random(n) < disorder_rate
    if not late.any():
        return np.arange(n)
    delay = rng.integers(1, _MAX_LATE_REPORTS, size=int(late.sum()), endpoint=True)
    # sort key: arrival period, then on-time rows before late ones, then router
    on_time_idx = np.flatnonzero(~late)
    on_time_key = step[on_time_idx] * (2 * n_routers) + router[on_time_idx]  # already sorted
    late_idx = np.flatnonzero(late)
    late_key = (step[late_idx] + delay) * (2 * n_routers) + n_routers + router[late_idx]
    by_key = np.argsort(late_key, kind="stable")
    late_idx, late_key = late_idx[by_key], late_key[by_key]
    where = np.searchsorted(on_time_key, late_key, side="right")
    return np.insert(on_time_idx, where, late_idx)


def router_incidents(
    n_routers: int = 50,
    duration: str | int | dt.timedelta = "1 day",
    period: str | int | dt.timedelta = "30 seconds",
    missing_rate: float = 0.02,
    disorder_rate: float = 0.01,
    seed: int = 0,
    threshold: float = 0.003,
    n_reports: int | None = None,
    mean_gap: float = 400.0,
    start: str = "2024-01-01",
) -> pd.DataFrame:
    """The incidents injected by :func:`router_readings` called with the same arguments.

    ``missing_rate``, ``disorder_rate`` and ``threshold`` do not change the incidents; they are
    accepted so that the two functions can share one ``**kwargs``.

    Returns
    -------
    pandas.DataFrame
        Columns ``router``, ``start`` (time of the incident's first scheduled report), ``end``
        (time of the first scheduled report after it: half-open ``[start, end)``), ``n_reports``
        (scheduled reports inside, some of which may be absent in the readings), sorted by
        ``(router, start)``.

    Examples
    --------
    >>> inc = router_incidents(n_routers=2, duration="1 day", seed=3)
    >>> list(inc.columns)
    ['router', 'start', 'end', 'n_reports']
    >>> bool(inc["n_reports"].between(2, 120).all())
    True
    >>> bool((inc["end"] - inc["start"] == inc["n_reports"] * pd.Timedelta("30s")).all())
    True
    """
    period_us, n_rep = _shape(duration, period, n_reports)
    rng_inc = np.random.default_rng(np.random.SeedSequence(seed).spawn(4)[0])
    router, inc_start, inc_len = _incident_table(rng_inc, n_routers, n_rep, mean_gap)
    start_us = pd.Timestamp(start, tz="UTC").value // 1_000
    return pd.DataFrame(
        {
            "router": _names(n_routers)[router],
            "start": _timestamps(start_us + inc_start * period_us),
            "end": _timestamps(start_us + (inc_start + inc_len) * period_us),
            "n_reports": inc_len.astype(np.int64),
        }
    )
