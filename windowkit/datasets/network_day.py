"""A generated "network day": one data set with a case for each of windowkit's techniques.

:func:`network_day` builds four tables of one (by default 24-hour) day and the ground truth of
everything injected into them:

* ``routers``: 30-second loss-rate reports (:func:`windowkit.datasets.routers.router_readings`:
  absent reports, late rows, injected high-loss *incidents*), for threshold frames;
* ``bgp``: each router's BGP messages, background keepalives and updates plus a *burst* of
  WITHDRAW/UPDATE churn starting up to two minutes before each incident and lasting into it,
  for filling the loss frames;
* ``flows``: traffic records. Background traffic comes in short *sessions* (a source talks to
  one to six destinations for seconds to half an hour; sources and destinations heavy-tailed,
  with a mild daily rhythm), so background sources are bursty rather than persistent. Injected:
  *heavy destinations* receiving a fixed share of all flows at every moment (windowed
  Count-Min heavy hitters), one *DoS-like burst* (one source to hundreds of fresh destinations
  per minute for a few minutes: multi-granular counts and distinct destinations), and
  *phone-home* sources that contact one external address every 5 to 15 minutes, jittered, all
  day (persistent items, never heavy);
* ``syscalls``: per host, a benign system-call stream with remote-shell episodes whose steps
  are spread over 2 to 40 minutes, each in a process of its own, and near-miss decoys
  (:func:`windowkit.datasets.syscalls.case_study`): progressive window widening catches the
  shells, a fixed 20-second window cannot.

:func:`demo_steps` gives the windowkit Spark functions and parameters that find every case;
``tests/test_demo.py`` runs that pipeline on a small day and checks each injected case is found.
Every random draw comes from an independent child of ``numpy.random.SeedSequence(seed)``.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from windowkit.core.durations import to_micros
from windowkit.core.validation import check_in_range, check_int
from windowkit.datasets.routers import router_incidents, router_readings
from windowkit.datasets.syscalls import MarkovModel, case_study, fit_markov, load_trace

MINUTE = 60_000_000
"""One minute in microseconds."""
REPORT_PERIOD = "30 seconds"
"""The routers' reporting period."""
LOSS_THRESHOLD = 0.003
"""Incidents' loss rates lie strictly above it, the baseline well below."""

BGP_KINDS = ("KEEPALIVE", "UPDATE", "WITHDRAW", "NOTIFICATION")
SHELL_SPAN_MINUTES = (2.0, 40.0)
"""Remote shells' (and decoys') first-to-last step spans, log-uniform, in minutes."""
PHONE_HOME_MINUTES = (5.0, 15.0)
"""Phone-home periods, uniform, in minutes."""
PHONE_HOME_JITTER = 0.2
"""Each phone-home gap is the period times a uniform factor in ``[1 - j, 1 + j]``."""
DOS_MINUTES = (3.0, 6.0)
DOS_FLOWS_PER_MINUTE = (300.0, 500.0)
_SESSION_MAX_FLOWS = 100
_SESSION_MAX_MINUTES = 20.0
_VISIT_MINUTES = (10.0, 70.0)
_SESSION_MAX_PEERS = 6
_DST_RANK_OFFSET = 100  # popularity 1 / (rank + offset): a power-law tail, no dominant head
_PORTS = np.array([443, 80, 53, 22, 25, 123, 993, 8080])
_PORT_WEIGHTS = np.array([0.55, 0.15, 0.1, 0.05, 0.04, 0.04, 0.04, 0.03])
# public first octets for external addresses (no private, loopback, link-local or multicast)
_PUBLIC_OCTETS = np.array([o for o in range(1, 224)
                           if o not in (10, 100, 127, 169, 172, 192, 198)])

def demo_steps() -> dict[str, dict[str, Any]]:
    """The demo's steps as the shipped pipeline ``windowkit/pipelines/network_day.toml`` gives
    them: per step, the windowkit Spark function, the tables or steps it reads (``input``;
    ``data`` for the filler of ``fill_frames``, ``candidates`` for ``heavy_hitters``) and its
    keyword parameters as written (durations as strings). That file is the one place they are
    set.

    Why these values: frames bridge an absent report inside an incident (``missing``); the
    filling reaches two minutes before a frame, where each incident's BGP burst starts; the
    Count-Min window is the last hour (60 one-minute ticks) with ``epsilon`` well under the
    smallest heavy share, and ``phi`` between the largest background destination's share and the
    smallest injected one; persistence over 4-hour windows of 15-minute slots (a phone-home gap
    is at most 18 minutes, so it is in every slot; a background source rarely is); widening from
    10-second batches up to one hour covers every shell, while the one-level comparison only sees
    20-second windows, shorter than any shell.

    Examples
    --------
    >>> steps = demo_steps()
    >>> steps["shells"]["function"], steps["shells"]["params"]["max_duration"]
    ('widen_detect', '1 hour')
    """
    from importlib import resources

    from windowkit.pipeline.spec import load_pipeline

    with resources.as_file(resources.files("windowkit.pipelines") / "network_day.toml") as path:
        pipeline = load_pipeline(str(path))
    return {step.name: {"function": step.function, **step.inputs, "params": step.params}
            for step in pipeline.steps}


SMALL_DAY: dict[str, Any] = {
    "hours": 5, "routers": 4, "hosts": 2, "flows_per_second": 1.0, "sources": 800,
    "destinations": 3000, "phone_home": 3, "shells": 2, "decoys": 3,
    "incident_gap": "40 minutes", "seed": 7}
"""A small day with every kind of case, a few thousand rows per table (tests, a quick demo)."""

TABLES = ("routers", "bgp", "flows", "syscalls")
TRUTH = ("incidents", "bgp_bursts", "heavy_destinations", "dos", "phone_home", "shells",
         "decoys")


@dataclass(frozen=True, eq=False)
class NetworkDay:
    """The tables of a generated day and the truth of what was injected.

    Times are ``datetime64[us, UTC]``. Tables: ``routers`` (router, time, loss_rate),
    ``bgp`` (router, time, kind, prefix), ``flows`` (time, src, dst, dst_port, bytes),
    ``syscalls`` (host, pid, process, time, call, fd, exe, ret). Truth:

    * ``incidents``: router, start, end (half-open, scheduled reports), n_reports (scheduled),
      n_present (reports present in ``routers``), first_seen, last_seen (times of the first
      and last present report inside; NaT if none);
    * ``bgp_bursts``: router, start, end, n_messages (the churn injected for each incident,
      in the same order as ``incidents``);
    * ``heavy_destinations``: dst, dst_port, flows (rows of ``flows``), share (of all rows),
      target_share (the probability each flow had of going there);
    * ``dos``: src, start, end (half-open: the last burst flow plus 1 µs), n_flows, n_dst;
    * ``phone_home``: src, dst, period_s (mean gap, seconds), jitter, n_flows;
    * ``shells`` and ``decoys``: host, pid, process, kind, start, end (first and last step
      times), n_rows (the process's rows).
    """

    routers: pd.DataFrame
    bgp: pd.DataFrame
    flows: pd.DataFrame
    syscalls: pd.DataFrame
    incidents: pd.DataFrame
    bgp_bursts: pd.DataFrame
    heavy_destinations: pd.DataFrame
    dos: pd.DataFrame
    phone_home: pd.DataFrame
    shells: pd.DataFrame
    decoys: pd.DataFrame

    def tables(self) -> dict[str, pd.DataFrame]:
        """The four data tables by name.

        Examples
        --------
        >>> sorted(network_day(hours=2, routers=2, hosts=1, flows_per_second=0.5,
        ...                    shells=1, decoys=0).tables())
        ['bgp', 'flows', 'routers', 'syscalls']
        """
        return {name: getattr(self, name) for name in TABLES}

    def truth(self) -> dict[str, pd.DataFrame]:
        """The truth tables by name.

        Examples
        --------
        >>> list(network_day(hours=2, routers=2, hosts=1, flows_per_second=0.5,
        ...                  shells=1, decoys=0).truth())[:3]
        ['incidents', 'bgp_bursts', 'heavy_destinations']
        """
        return {name: getattr(self, name) for name in TRUTH}


def network_day(
    hours: float = 24.0,
    routers: int = 20,
    hosts: int = 6,
    flows_per_second: float = 12.0,
    sources: int = 8000,
    destinations: int = 30_000,
    heavy_shares: tuple[float, ...] = (0.05, 0.035, 0.025, 0.02),
    phone_home: int = 5,
    shells: int = 4,
    decoys: int = 3,
    syscalls_per_second: float = 0.5,
    incident_gap: str = "3 hours",
    seed: int = 0,
    start: str = "2024-01-01",
) -> NetworkDay:
    """Generate a network day (see the module docstring).

    Parameters
    ----------
    hours : float
        Length of the day, at least 2 (the longest shell spans 40 minutes).
    routers : int
        Routers reporting loss rates and sending BGP messages.
    hosts : int
        Hosts recording system calls.
    flows_per_second : float
        Mean rate of background flows (the day's mean; the rate follows a mild daily rhythm).
    sources, destinations : int
        Internal source and external destination addresses of the background traffic.
    heavy_shares : tuple of float
        One heavy destination per entry, receiving that share of all flows; the shares sum
        to less than 0.5.
    phone_home : int
        Phone-home sources.
    shells, decoys : int
        Remote-shell episodes and near-miss decoys (spread over the hosts).
    syscalls_per_second : float
        System calls per second per host.
    incident_gap : str
        Mean time between two loss incidents of a router.
    seed : int
        Seed; the day is a deterministic function of all the arguments.
    start : str
        UTC start of the day.

    Returns
    -------
    NetworkDay

    Examples
    --------
    >>> day = network_day(hours=2, routers=3, hosts=2, flows_per_second=2, seed=1)
    >>> list(day.flows.columns), str(day.flows["time"].dtype)
    (['time', 'src', 'dst', 'dst_port', 'bytes'], 'datetime64[us, UTC]')
    >>> len(day.shells), len(day.decoys), len(day.phone_home)
    (4, 3, 5)
    >>> day.flows.equals(network_day(hours=2, routers=3, hosts=2, flows_per_second=2,
    ...                              seed=1).flows)
    True
    """
    check_in_range("hours", hours, 2, 24 * 366)
    check_int("routers", routers, 1)
    check_int("hosts", hosts, 1)
    check_in_range("flows_per_second", flows_per_second, 0, 10_000, low_open=True)
    check_int("sources", sources, 1)
    check_int("destinations", destinations, 1)
    for i, share in enumerate(heavy_shares):
        check_in_range(f"heavy_shares[{i}]", share, 0, 0.5, low_open=True)
    check_in_range("sum(heavy_shares)", float(sum(heavy_shares)), 0, 0.5, high_open=True)
    check_int("phone_home", phone_home, 0)
    check_int("shells", shells, 0)
    check_int("decoys", decoys, 0)
    check_in_range("syscalls_per_second", syscalls_per_second, 0.01, 100)
    gap_us = to_micros(incident_gap, "incident_gap")
    check_int("seed", seed, 0)
    origin = pd.Timestamp(start, tz="UTC").value // 1_000
    span = int(round(hours * 3_600_000_000))
    seeds = np.random.SeedSequence(seed).spawn(4)
    rng_router, rng_flows, rng_sys = (np.random.default_rng(s) for s in seeds[1:])

    readings, incidents = _router_tables(routers, span, gap_us, seeds[0], start)
    bgp, bursts = _bgp(rng_router, routers, incidents, origin, span)
    flows, heavy, dos, home = _flows(rng_flows, span, origin, flows_per_second, sources,
                                     destinations, tuple(heavy_shares), phone_home)
    syscalls, shell_truth, decoy_truth = _syscalls(rng_sys, hosts, span, origin,
                                                   syscalls_per_second, shells, decoys)
    return NetworkDay(readings, bgp, flows, syscalls, incidents, bursts, heavy, dos, home,
                      shell_truth, decoy_truth)


def write_network_day(directory: str, day: NetworkDay) -> dict[str, str]:
    """Write each table as one Parquet file, the truth tables under ``truth/``.

    Times are written as ``timestamp[us, tz=UTC]`` (what Spark reads as timestamps).

    Returns
    -------
    dict of str to str
        Table name (``"routers"``, ..., ``"incidents"``, ...) to the file's path.

    Examples
    --------
    >>> import tempfile
    >>> day = network_day(hours=2, routers=2, hosts=1, flows_per_second=0.5, shells=1,
    ...                   decoys=0)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     paths = write_network_day(d, day)
    ...     str(pq.read_schema(paths["flows"]).field("time").type)
    'timestamp[us, tz=UTC]'
    >>> sorted(paths)[:3], os.path.basename(os.path.dirname(paths["shells"]))
    (['bgp', 'bgp_bursts', 'decoys'], 'truth')
    """
    os.makedirs(os.path.join(directory, "truth"), exist_ok=True)
    paths = {}
    for f in fields(day):
        sub = "truth" if f.name in TRUTH else ""
        path = os.path.join(directory, sub, f"{f.name}.parquet")
        pq.write_table(_arrow(getattr(day, f.name)), path)
        paths[f.name] = path
    return paths


def _arrow(df: pd.DataFrame) -> pa.Table:
    table = pa.Table.from_pandas(df, preserve_index=False)
    stamp = pa.timestamp("us", tz="UTC")
    for i, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type) and field.type != stamp:
            table = table.set_column(i, field.name, table.column(i).cast(stamp))
    return table.replace_schema_metadata(None)


def _timestamps(us: np.ndarray) -> pd.Series:
    return pd.Series(np.asarray(us, dtype=np.int64).astype("datetime64[us]")).dt.tz_localize(
        "UTC")


def _child_seed(seq: np.random.SeedSequence) -> int:
    return int(seq.generate_state(1, dtype=np.uint32)[0])


# ------------------------------------------------------------------------------ routers, BGP
def _router_tables(n_routers: int, span: int, gap_us: int, seq: np.random.SeedSequence,
                   start: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Readings and incidents, with what of each incident is present in the readings."""
    period = to_micros(REPORT_PERIOD, "period")
    kwargs = {"n_routers": n_routers, "duration": span, "period": period,
              "seed": _child_seed(seq), "threshold": LOSS_THRESHOLD,
              "mean_gap": max(gap_us / period, 1.0), "start": start}
    readings = router_readings(**kwargs)
    incidents = router_incidents(**kwargs)
    # each present report inside an incident, matched by (router, time)
    inc = incidents.reset_index(drop=True)
    joined = readings[["router", "time"]].merge(
        pd.DataFrame({"router": np.repeat(inc["router"].to_numpy(), inc["n_reports"]),
                      "time": _timestamps(np.concatenate(
                          [np.arange(s, e, period) for s, e in zip(
                              _us(inc["start"]), _us(inc["end"]), strict=True)])
                          if len(inc) else np.empty(0, np.int64)),
                      "incident": np.repeat(np.arange(len(inc)), inc["n_reports"])}),
        on=["router", "time"])
    seen = joined.groupby("incident")["time"].agg(["size", "min", "max"]).reindex(
        range(len(inc)))
    inc["n_present"] = seen["size"].fillna(0).astype(np.int64).to_numpy()
    inc["first_seen"] = seen["min"].to_numpy()
    inc["last_seen"] = seen["max"].to_numpy()
    for col in ("first_seen", "last_seen"):
        inc[col] = pd.to_datetime(inc[col], utc=True).astype("datetime64[us, UTC]")
    return readings, inc


def _us(ts: pd.Series) -> np.ndarray:
    return ts.astype("datetime64[us, UTC]").astype(np.int64).to_numpy()


def _bgp(rng: np.random.Generator, n_routers: int, incidents: pd.DataFrame, origin: int,
         span: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Keepalives every minute, sparse updates and withdrawals, rare notifications, and a
    burst of WITHDRAW/UPDATE churn around each incident."""
    width = max(3, len(str(n_routers - 1)))  # the names router_readings gives
    names = np.array([f"r{i:0{width}d}" for i in range(n_routers)], dtype=object)
    parts = []
    # keepalives: every 60 s per router, each router on its own phase
    phase = rng.integers(0, MINUTE, n_routers)
    ticks = np.arange(0, span, MINUTE, dtype=np.int64)
    t = (phase[:, None] + ticks[None, :]).ravel()
    r = np.repeat(np.arange(n_routers), len(ticks))
    keep = t < span
    parts.append((r[keep], t[keep], np.zeros(keep.sum(), np.int64)))
    # background churn: one UPDATE or WITHDRAW every 10 minutes per router; notifications
    # once a day per router
    for kind, per_minute in ((1, 0.07), (2, 0.03), (3, 1 / 1440)):
        n = rng.poisson(per_minute * n_routers * span / MINUTE)
        parts.append((rng.integers(0, n_routers, n), rng.integers(0, span, n),
                      np.full(n, kind, np.int64)))
    # bursts: start up to two minutes before the incident, last into it (at most 4 minutes)
    inc_router = np.searchsorted(names, incidents["router"].to_numpy())
    inc_start = _us(incidents["start"]) - origin
    inc_end = _us(incidents["end"]) - origin
    lead = rng.uniform(0.5, 1.9, len(incidents)) * MINUTE
    b_start = inc_start - lead.astype(np.int64)
    b_end = np.minimum(inc_end, inc_start + 4 * MINUTE)
    n_msg = 5 + rng.poisson(12.0 * (b_end - b_start) / MINUTE)
    br = np.repeat(inc_router, n_msg)
    bt = np.repeat(b_start, n_msg) + (rng.random(n_msg.sum())
                                      * np.repeat(b_end - b_start, n_msg)).astype(np.int64)
    parts.append((br, bt, np.where(rng.random(len(bt)) < 0.55, 2, 1)))

    router = np.concatenate([p[0] for p in parts])
    time = np.concatenate([p[1] for p in parts])
    kind = np.concatenate([p[2] for p in parts])
    inside = (time >= 0) & (time < span)
    router, time, kind = router[inside], time[inside], kind[inside]
    # prefixes: each router announces 40 /24s of its own; keepalives carry none
    prefix_idx = rng.integers(0, 40, len(time))
    prefix = np.array([f"{20 + i // 250}.{i % 250}.{k}.0/24" for i in range(n_routers)
                       for k in range(40)], dtype=object)[router * 40 + prefix_idx]
    prefix[kind == 0] = None
    prefix[kind == 3] = None
    order = np.lexsort((router, time))
    bgp = pd.DataFrame({"router": names[router[order]], "time": _timestamps(origin + time[order]),
                        "kind": np.array(BGP_KINDS, dtype=object)[kind[order]],
                        "prefix": prefix[order]})
    bursts = pd.DataFrame({"router": incidents["router"].to_numpy(),
                           "start": _timestamps(origin + b_start),
                           "end": _timestamps(origin + b_end),
                           "n_messages": n_msg.astype(np.int64)})
    return bgp, bursts


# ------------------------------------------------------------------------------ flows
def _external_ips(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` distinct public IPv4 addresses as strings."""
    out = np.empty(0, dtype=np.int64)
    while len(out) < n:
        more = 2 * (n - len(out)) + 16
        draw = (rng.choice(_PUBLIC_OCTETS, more).astype(np.int64) << 24) | rng.integers(
            1, 1 << 24, more)
        out = np.concatenate([out, draw])
        _, first = np.unique(out, return_index=True)
        out = out[np.sort(first)]  # distinct, in draw order (deterministic)
    return _dotted(out[:n])


def _internal_ips(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` distinct addresses in 10.0.0.0/8 as strings."""
    return _dotted((10 << 24) | rng.choice(np.arange(256, 1 << 24, dtype=np.int64), n,
                                           replace=False))


def _dotted(ips: np.ndarray) -> np.ndarray:
    ips = np.asarray(ips, dtype=np.int64)
    octets = [(ips >> s) & 255 for s in (24, 16, 8, 0)]
    return np.array([f"{a}.{b}.{c}.{d}" for a, b, c, d in zip(*octets, strict=True)],
                    dtype=object)


def _daily_starts(rng: np.random.Generator, n: int, span: int, origin: int) -> np.ndarray:
    """``n`` times in ``[0, span)`` drawn from a rate that peaks at 15:00 UTC, lowest at 3:00
    (0.6 to 1.4 times the mean)."""
    grid = np.linspace(0, span, 1441)
    hour = ((origin + grid) / 3_600_000_000) % 24
    rate = 1.0 + 0.4 * np.sin(2 * np.pi * (hour - 9) / 24)
    cum = np.concatenate([[0.0], np.cumsum((rate[1:] + rate[:-1]) / 2)])
    return np.interp(rng.random(n) * cum[-1], cum, grid).astype(np.int64)


def _flows(rng: np.random.Generator, span: int, origin: int, rate: float, n_sources: int,
           n_destinations: int, heavy_shares: tuple[float, ...], n_home: int,
           ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    src_pool = _internal_ips(rng, n_sources + n_home)
    dst_pool = _external_ips(rng, n_destinations + len(heavy_shares) + n_home)
    heavy_ips, home_ips = dst_pool[n_destinations:n_destinations + len(heavy_shares)], \
        dst_pool[n_destinations + len(heavy_shares):]
    cols = _sessions(rng, span, origin, rate, n_sources, n_destinations)
    # heavy destinations: every background flow goes to heavy j with probability share_j
    cum = np.cumsum(heavy_shares)
    u = rng.random(len(cols["time"]))
    which = np.searchsorted(cum, u, side="right")
    heavy = which < len(heavy_shares)
    heavy_ports = np.where(np.arange(len(heavy_shares)) % 4 == 1, 53, 443)
    dst = dst_pool[cols["dst"]]
    dst[heavy] = heavy_ips[which[heavy]]
    port = cols["port"].copy()
    port[heavy] = heavy_ports[which[heavy]]
    parts = [(cols["time"], src_pool[cols["src"]], dst, port, cols["bytes"])]

    dos_part, dos = _dos(rng, span, origin, src_pool, *cols["visits"])
    parts.append(dos_part)
    home_part, home = _phone_home(rng, span, src_pool[n_sources:], home_ips)
    parts.append(home_part)

    time = np.concatenate([p[0] for p in parts])
    order = np.argsort(time, kind="stable")
    flows = pd.DataFrame({
        "time": _timestamps(origin + time[order]),
        "src": np.concatenate([p[1] for p in parts])[order],
        "dst": np.concatenate([p[2] for p in parts])[order],
        "dst_port": np.concatenate([p[3] for p in parts]).astype(np.int32)[order],
        "bytes": np.concatenate([p[4] for p in parts]).astype(np.int64)[order],
    })
    counts = flows["dst"].value_counts()
    heavy_truth = pd.DataFrame({
        "dst": heavy_ips, "dst_port": heavy_ports.astype(np.int32),
        "flows": counts.reindex(heavy_ips).fillna(0).astype(np.int64).to_numpy(),
        "target_share": np.asarray(heavy_shares, dtype=np.float64)})
    heavy_truth.insert(3, "share", heavy_truth["flows"] / max(len(flows), 1))
    home["n_flows"] = flows["src"].value_counts().reindex(home["src"]).fillna(0).astype(
        np.int64).to_numpy()
    return flows, heavy_truth, dos, home


def _sessions(rng: np.random.Generator, span: int, origin: int, rate: float,
              n_sources: int, n_destinations: int) -> dict[str, np.ndarray]:
    """Background flows: (time, src index, dst index, port, bytes) columns.

    A source is online in one to three *visits* a day of 10 to 70 minutes (starts following
    the daily rhythm); its flows come in *sessions* inside its visits, each to one to six
    destinations for at most 20 minutes. So a background source is seen within at most
    90 minutes at a time, bursty rather than persistent; its activity (flows per visit) is
    heavy-tailed, and so is each destination's popularity.
    """
    v_src, v_start, v_len = _visits(rng, span, origin, n_sources)
    v_weight = rng.lognormal(0.0, 0.7, n_sources)[v_src] * v_len

    target = rng.poisson(rate * span / 1e6)
    flows_per = np.minimum(1 + np.floor(rng.lognormal(1.6, 1.2, size=2 * target // 5 + 64)),
                           _SESSION_MAX_FLOWS).astype(np.int64)
    n = int(np.searchsorted(np.cumsum(flows_per), target) + 1)
    flows_per = flows_per[:n]
    visit = rng.choice(len(v_src), n, p=v_weight / v_weight.sum())
    start = v_start[visit] + (rng.random(n) * v_len[visit]).astype(np.int64)
    per_minute = np.clip(rng.lognormal(np.log(4.0), 0.8, n), 0.5, 60.0)
    duration = (np.clip(flows_per / per_minute, 1 / 12, _SESSION_MAX_MINUTES) * MINUTE
                ).astype(np.int64)
    src = v_src[visit]
    pop = 1.0 / (np.arange(n_destinations) + _DST_RANK_OFFSET)
    ranked = rng.permutation(n_destinations)
    peers = np.minimum(rng.geometric(0.55, n), _SESSION_MAX_PEERS)
    first_peer = np.concatenate([[0], np.cumsum(peers)[:-1]])
    peer_dst = ranked[rng.choice(n_destinations, int(peers.sum()), p=pop / pop.sum())]
    peer_port = rng.choice(_PORTS, int(peers.sum()), p=_PORT_WEIGHTS)

    session = np.repeat(np.arange(n), flows_per)
    time = start[session] + (rng.random(len(session)) * duration[session]).astype(np.int64)
    peer = first_peer[session] + (rng.random(len(session)) * peers[session]).astype(np.int64)
    keep = time < span
    return {"time": time[keep], "src": src[session][keep], "dst": peer_dst[peer][keep],
            "port": peer_port[peer][keep],
            "bytes": np.maximum(40, rng.lognormal(7.0, 1.8, int(keep.sum()))).astype(np.int64),
            "visits": (v_src, v_start, v_len)}


def _visits(rng: np.random.Generator, span: int, origin: int, n_sources: int,
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source, start, length) of each visit: one per source, and for 40 % of them a second
    one 4 to 16 hours before or after (dropped if outside the day)."""
    first = _daily_starts(rng, n_sources, span, origin)
    shift = (rng.uniform(4.0, 16.0, n_sources) * 60 * MINUTE).astype(np.int64)
    second = np.where(first + shift < span, first + shift, first - shift)
    has_second = (rng.random(n_sources) < 0.4) & (second >= 0)
    src = np.concatenate([np.arange(n_sources), np.flatnonzero(has_second)])
    start = np.concatenate([first, second[has_second]])
    length = (rng.uniform(*_VISIT_MINUTES, len(src)) * MINUTE).astype(np.int64)
    return src, start, length


def _dos(rng: np.random.Generator, span: int, origin: int, src_pool: np.ndarray,
         v_src: np.ndarray, v_start: np.ndarray, v_len: np.ndarray,
         ) -> tuple[tuple, pd.DataFrame]:
    """A background source sends small flows to hundreds of fresh addresses a minute.

    The source is one whose visits all lie at least two hours from the burst, so the burst
    stands alone in its traffic (and cannot make it look persistent).
    """
    length = int(rng.uniform(*DOS_MINUTES) * MINUTE)
    lo = int(0.2 * span)
    begin = int(rng.integers(lo, max(lo + 1, int(0.8 * span) - length)))
    n = int(rng.poisson(rng.uniform(*DOS_FLOWS_PER_MINUTE) * length / MINUTE))
    time = begin + rng.integers(0, length, n)
    margin = 120 * MINUTE
    near = (v_start < begin + length + margin) & (v_start + v_len > begin - margin)
    quiet = np.setdiff1d(np.unique(v_src), v_src[near])
    src = src_pool[quiet[rng.integers(0, len(quiet))] if len(quiet) else 0]
    pool = _external_ips(rng, n)
    dst = np.where(rng.random(n) < 0.1, pool[rng.integers(0, n, n)], pool)  # a few repeats
    part = (time, np.full(n, src, dtype=object), dst, np.full(n, 80),
            rng.integers(40, 120, n))
    truth = pd.DataFrame({"src": [src], "start": _timestamps(origin + np.array([time.min()])),
                          "end": _timestamps(origin + np.array([time.max() + 1])),
                          "n_flows": [n], "n_dst": [len(set(dst))]})
    return part, truth


def _phone_home(rng: np.random.Generator, span: int, srcs: np.ndarray, dsts: np.ndarray,
                ) -> tuple[tuple, pd.DataFrame]:
    """Each source contacts its own address every ``period`` (jittered), all day."""
    period = rng.uniform(*PHONE_HOME_MINUTES, len(srcs)) * MINUTE
    times, src, dst = [], [], []
    for i, p in enumerate(period):
        count = int(span / (p * (1 - PHONE_HOME_JITTER))) + 2
        gaps = p * rng.uniform(1 - PHONE_HOME_JITTER, 1 + PHONE_HOME_JITTER, count)
        t = (rng.uniform(0, p) + np.concatenate([[0.0], np.cumsum(gaps[:-1])])).astype(np.int64)
        t = t[t < span]
        times.append(t)
        src.append(np.full(len(t), srcs[i], dtype=object))
        dst.append(np.full(len(t), dsts[i], dtype=object))
    n = sum(len(t) for t in times)
    part = (np.concatenate(times) if times else np.empty(0, np.int64),
            np.concatenate(src) if src else np.empty(0, object),
            np.concatenate(dst) if dst else np.empty(0, object),
            np.full(n, 443), rng.integers(300, 900, n))
    truth = pd.DataFrame({"src": srcs, "dst": dsts, "period_s": period / 1e6,
                          "jitter": PHONE_HOME_JITTER})
    return part, truth


# ------------------------------------------------------------------------------ syscalls
@functools.lru_cache(maxsize=1)
def _benign_model() -> MarkovModel:
    return fit_markov(load_trace()[0])


def _syscalls(rng: np.random.Generator, n_hosts: int, span: int, origin: int, rate: float,
              n_shells: int, n_decoys: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Per host one case-study stream (shells and decoys in processes of their own), times
    jittered within each call's slot."""
    unit = int(round(1e6 / rate))
    n_events = span // unit
    lo, hi = (int(math.ceil(m * MINUTE / unit)) for m in SHELL_SPAN_MINUTES)
    hi = min(hi, n_events - 1)
    if lo > hi:
        msg = f"`hours` too short for shells spanning {SHELL_SPAN_MINUTES} minutes"
        raise ValueError(msg)
    width = max(2, len(str(n_hosts)))
    names = [f"host{h:0{width}d}" for h in range(n_hosts)]
    shells_on = np.bincount(np.arange(n_shells) % n_hosts, minlength=n_hosts)
    # decoys in blocks of three (one of each kind), a block per host, from the last host back
    decoys_on = np.bincount(n_hosts - 1 - (np.arange(n_decoys) // 3) % n_hosts,
                            minlength=n_hosts)
    model = _benign_model()
    frames, truth = [], []
    for h, name in enumerate(names):
        cs = case_study(n_events=n_events, n_attacks=int(shells_on[h]),
                        n_decoys=int(decoys_on[h]), min_duration=max(lo, 4),
                        max_duration=max(hi, 4), unit=unit,
                        seed=int(rng.integers(0, 2**31)), model=model)
        ev = cs.events
        time = origin + ev["time"].to_numpy() + rng.integers(0, unit, len(ev))
        frame = pd.DataFrame({"host": name, "pid": ev["key"].to_numpy(np.int64),
                              "time": time})
        for col in ("call", "fd", "exe", "ret"):
            frame[col] = ev[col].astype(object).where(ev[col].notna(), None).to_numpy()
        frames.append(frame)
        t = cs.truth
        mine = frame[frame["pid"].isin(t["key"])].groupby("pid")["time"].agg(
            ["min", "max", "size"]).reindex(t["key"])
        truth.append(pd.DataFrame({
            "host": name, "pid": t["key"].to_numpy(np.int64),
            "kind": t["kind"].replace({"attack": "remote-shell"}).to_numpy(object),
            "start": mine["min"].to_numpy(), "end": mine["max"].to_numpy(),
            "n_rows": mine["size"].to_numpy(np.int64)}))
    calls = pd.concat(frames, ignore_index=True)
    calls = calls.iloc[np.lexsort((calls["host"].to_numpy(), calls["time"].to_numpy()))]
    calls = calls.reset_index(drop=True)
    calls.insert(2, "process", calls["host"] + "/" + calls["pid"].astype(str))
    calls["time"] = _timestamps(calls["time"].to_numpy())
    calls = calls[["host", "pid", "process", "time", "call", "fd", "exe", "ret"]]
    injected = pd.concat(truth, ignore_index=True)
    injected.insert(2, "process", injected["host"] + "/" + injected["pid"].astype(str))
    for col in ("start", "end"):
        injected[col] = _timestamps(injected[col].to_numpy())
    is_shell = injected["kind"] == "remote-shell"
    return (calls, injected[is_shell].reset_index(drop=True),
            injected[~is_shell].reset_index(drop=True))
