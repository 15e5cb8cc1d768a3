"""The generated network day (issue #18): its truth agrees with its rows and with what the
demo's steps can find (tests/test_demo.py runs them on Spark)."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkit.core.durations import to_micros
from windowkit.core.widening import REMOTE_SHELL
from windowkit.datasets.network_day import (
    LOSS_THRESHOLD,
    MINUTE,
    PHONE_HOME_MINUTES,
    SHELL_SPAN_MINUTES,
    SMALL_DAY,
    TABLES,
    TRUTH,
    demo_steps,
    network_day,
    write_network_day,
)
from windowkit.reference.episodes import occurrences

SMALL = SMALL_DAY

COLUMNS = {
    "routers": {"router": "object", "time": "datetime64[us, UTC]", "loss_rate": "float64"},
    "bgp": {"router": "object", "time": "datetime64[us, UTC]", "kind": "object",
            "prefix": "object"},
    "flows": {"time": "datetime64[us, UTC]", "src": "object", "dst": "object",
              "dst_port": "int32", "bytes": "int64"},
    "syscalls": {"host": "object", "pid": "int64", "process": "object",
                 "time": "datetime64[us, UTC]", "call": "object", "fd": "object",
                 "exe": "object", "ret": "object"},
}
DEMO = demo_steps()
PERIOD = to_micros("30 seconds", "period")
CHURN = ("WITHDRAW", "UPDATE")


@pytest.fixture(scope="module")
def full_day():
    """The demo's default day (about 1.4 M rows, generated in a second or two)."""
    return network_day()


@pytest.fixture(scope="module")
def small_day():
    return network_day(**SMALL)


def micros(ts: pd.Series) -> np.ndarray:
    return ts.astype("datetime64[us, UTC]").astype("int64").to_numpy()


# ----------------------------------------------------------------------------- generator
def test_same_seed_same_day_and_another_seed_another_day():
    small = {**SMALL, "hours": 2}
    a, b, c = network_day(**small), network_day(**small), network_day(**{**small, "seed": 8})
    for name in (*TABLES, *TRUTH):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))
    assert not a.flows.equals(c.flows)
    assert not a.routers.equals(c.routers)
    assert not a.syscalls.equals(c.syscalls)


def test_schemas(small_day):
    for name, columns in COLUMNS.items():
        table = getattr(small_day, name)
        assert dict(table.dtypes.astype(str)) == columns, name
        assert len(table) > 0, name
    assert set(small_day.bgp["kind"]) <= {"KEEPALIVE", "UPDATE", "WITHDRAW", "NOTIFICATION"}
    assert small_day.flows["time"].is_monotonic_increasing
    assert small_day.flows["src"].str.startswith("10.").all()
    octets = small_day.flows["dst"].str.split(".", expand=True).astype(int)
    assert octets.shape[1] == 4 and octets.ge(0).all().all() and octets.le(255).all().all()
    assert not small_day.flows["dst"].str.startswith("10.").any()


def test_default_day_size(full_day):
    rows = {name: len(t) for name, t in full_day.tables().items()}
    assert 1_000_000 <= sum(rows.values()) <= 2_000_000, rows
    assert rows["flows"] > sum(rows.values()) / 2, rows


@pytest.mark.parametrize(("param", "value"), [
    ("hours", 1), ("routers", 0), ("hosts", 0), ("flows_per_second", 0.0),
    ("sources", 0), ("heavy_shares", (0.3, 0.3)), ("shells", -1), ("seed", -1),
    ("syscalls_per_second", 0.0), ("incident_gap", "soon"),
])
def test_invalid_parameters_name_themselves(param, value):
    name = "sum(heavy_shares)" if param == "heavy_shares" else param
    with pytest.raises(ValueError, match=rf"`{re.escape(name)}`"):
        network_day(**{**SMALL, param: value})


def test_write_network_day_round_trips(tmp_path, small_day):
    paths = write_network_day(str(tmp_path), small_day)
    assert set(paths) == {*TABLES, *TRUTH}
    for name in TRUTH:
        assert paths[name] == str(tmp_path / "truth" / f"{name}.parquet")
    for name in (*TABLES, *TRUTH):
        schema = pq.read_schema(paths[name])
        for field in schema:
            if "timestamp" in str(field.type):
                assert str(field.type) == "timestamp[us, tz=UTC]", (name, field)
        back = pq.read_table(paths[name]).to_pandas()
        expected = getattr(small_day, name)
        back = back.astype({c: expected[c].dtype for c in expected.columns})
        pd.testing.assert_frame_equal(back, expected, check_dtype=False)


def test_incidents_agree_with_the_readings(small_day):
    readings, inc = small_day.routers, small_day.incidents
    assert len(inc) >= 3
    t = micros(readings["time"])
    for row in inc.itertuples():
        mine = readings[(readings["router"] == row.router).to_numpy()
                        & (t >= micros(pd.Series([row.start]))[0])
                        & (t < micros(pd.Series([row.end]))[0])]
        assert len(mine) == row.n_present
        assert (mine["loss_rate"] > LOSS_THRESHOLD).all()
        assert row.n_reports == (row.end - row.start) // pd.Timedelta(PERIOD, "us")
        if len(mine):
            assert mine["time"].min() == row.first_seen and mine["time"].max() == row.last_seen
    outside = readings.merge(inc, on="router")
    inside = (outside["time"] >= outside["start"]) & (outside["time"] < outside["end"])
    hit = outside.loc[inside, ["router", "time"]].drop_duplicates()
    rest = readings.merge(hit, on=["router", "time"], how="left", indicator=True)
    assert (rest.loc[rest["_merge"] == "left_only", "loss_rate"] <= 0.7 * LOSS_THRESHOLD).all()


def test_bgp_bursts_precede_and_overlap_their_incidents(small_day):
    bgp, inc, bursts = small_day.bgp, small_day.incidents, small_day.bgp_bursts
    assert len(bursts) == len(inc)
    lead = inc["start"] - bursts["start"]
    assert ((lead > pd.Timedelta(0)) & (lead < pd.Timedelta("2 minutes"))).all()
    assert (bursts["end"] > inc["start"]).all() and (bursts["end"] <= inc["end"]).all()
    churn = bgp[bgp["kind"].isin(CHURN)]
    background = len(churn) / (len(small_day.routers["router"].unique()) * SMALL["hours"] * 60)
    for b in bursts.itertuples():
        mine = churn[(churn["router"] == b.router) & (churn["time"] >= b.start)
                     & (churn["time"] < b.end)]
        assert len(mine) >= b.n_messages
        minutes = (b.end - b.start) / pd.Timedelta("1 minute")
        assert len(mine) / minutes > 5 * background
    keepalive = bgp[bgp["kind"] == "KEEPALIVE"]
    gaps = keepalive.groupby("router")["time"].diff().dropna()
    assert (gaps == pd.Timedelta("1 minute")).all()


def test_heavy_destinations_counts_and_shares(full_day):
    flows, heavy = full_day.flows, full_day.heavy_destinations
    counts = flows["dst"].value_counts()
    assert heavy["flows"].tolist() == counts.reindex(heavy["dst"]).tolist()
    assert np.allclose(heavy["share"], heavy["flows"] / len(flows))
    assert np.allclose(heavy["share"], heavy["target_share"], rtol=0.05)
    # heavy in every hour of the day, and no background destination comes near phi
    phi = DEMO["heavy_destinations"]["params"]["phi"]
    hour = micros(flows["time"]) // 3_600_000_000
    per_hour = flows.groupby([hour, "dst"]).size()
    share = per_hour / per_hour.groupby(level=0).transform("sum")
    is_heavy = share.index.get_level_values("dst").isin(heavy["dst"])
    assert share[is_heavy].min() > 1.5 * phi
    assert share[~is_heavy].max() < phi


def test_dos_truth_and_its_peak(full_day):
    flows, dos = full_day.flows, full_day.dos.iloc[0]
    burst = flows[(flows["src"] == dos.src) & (flows["time"] >= dos.start)
                  & (flows["time"] < dos.end)]
    assert len(burst) == dos.n_flows and burst["dst"].nunique() == dos.n_dst
    minutes = (dos.end - dos.start) / pd.Timedelta("1 minute")
    assert 3 <= minutes <= 6 and dos.n_dst / minutes > 150
    # the source's busiest minute, in flows and in destinations, is the day's busiest
    minute = micros(flows["time"]) // MINUTE
    per_minute = flows.groupby(["src", minute]).agg(n=("dst", "size"), d=("dst", "nunique"))
    own = per_minute.loc[dos.src]
    peak = own["n"].idxmax() * MINUTE
    assert micros(pd.Series([dos.start]))[0] - MINUTE < peak < micros(pd.Series([dos.end]))[0]
    others = per_minute.drop(dos.src, level="src")
    assert own["n"].max() > 2 * others["n"].max()
    assert own["d"].max() > 3 * others["d"].max()


def persistence(flows: pd.DataFrame, slot: int, n: int) -> pd.Series:
    """Each source's largest number of distinct slots within ``n`` consecutive slots."""
    slots = pd.DataFrame({"src": flows["src"], "s": micros(flows["time"]) // slot})
    pairs = slots.drop_duplicates()
    best = {}
    for src, s in pairs.groupby("src")["s"]:
        s = np.sort(s.to_numpy())
        # slots within [s_i - n + 1, s_i] for each i: the count ending at s_i
        best[src] = int((np.arange(len(s)) - np.searchsorted(s, s - n + 1) + 1).max())
    return pd.Series(best)


def test_phone_home_is_periodic_persistent_and_background_is_not(full_day):
    flows, home = full_day.flows, full_day.phone_home
    assert len(home) == 5 and home["src"].is_unique
    lo, hi = PHONE_HOME_MINUTES
    for h in home.itertuples():
        mine = flows[flows["src"] == h.src]
        assert len(mine) == h.n_flows
        assert (mine["dst"] == h.dst).all()
        gaps = mine["time"].diff().dropna() / pd.Timedelta("1 second")
        assert lo * 60 <= h.period_s <= hi * 60
        assert gaps.between((1 - h.jitter) * h.period_s - 1e-3,
                            (1 + h.jitter) * h.period_s + 1e-3).all()
        assert h.n_flows / len(flows) < DEMO["heavy_destinations"]["params"]["phi"] / 10
    params = DEMO["persistent_sources"]["params"]
    n = params["window_slots"]
    best = persistence(flows, to_micros(params["slot"], "slot"), n)
    assert (best[home["src"]] >= math.ceil(params["alpha"] * n)).all()
    # below (alpha - epsilon) n: the sketch never reports any background source
    never = math.ceil(round((params["alpha"] - params["epsilon"]) * n, 9))
    assert best.drop(home["src"]).max() < never


def test_shells_and_decoys_are_in_their_hosts_calls(small_day):
    calls = small_day.syscalls
    shells, decoys = small_day.shells, small_day.decoys
    assert len(shells) == SMALL["shells"] and set(shells["kind"]) == {"remote-shell"}
    assert sorted(decoys["kind"]) == ["missing-dup", "other-fd", "wrong-order"]
    assert calls.groupby("host")["time"].is_monotonic_increasing.all()
    fixed_window = 2 * to_micros(DEMO["shells_fixed_window"]["params"]["base"], "base")
    widest = to_micros(DEMO["shells"]["params"]["max_duration"], "max_duration")
    lo, hi = SHELL_SPAN_MINUTES
    for row in pd.concat([shells, decoys]).itertuples():
        mine = calls[calls["process"] == row.process]
        assert (mine["host"] == row.host).all() and (mine["pid"] == row.pid).all()
        assert len(mine) == row.n_rows <= DEMO["shells"]["params"]["max_length"]
        assert mine["time"].min() == row.start and mine["time"].max() == row.end
        span = micros(pd.Series([row.end]))[0] - micros(pd.Series([row.start]))[0]
        assert lo * MINUTE <= span <= hi * MINUTE + MINUTE
        assert fixed_window < span <= widest
        events = mine[["call", "fd", "exe", "ret"]].to_dict("records")
        found = occurrences(REMOTE_SHELL, events)
        assert bool(found) == (row.kind == "remote-shell"), row
    # benign processes never accept a connection, so none holds the episode's first step
    injected = set(shells["process"]) | set(decoys["process"])
    assert not calls.loc[~calls["process"].isin(injected), "call"].eq("accept").any()


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**20), hours=st.floats(2, 4), hosts=st.integers(1, 3),
       shells=st.integers(0, 3), decoys=st.integers(0, 4))
def test_truth_counts_match_rows_for_any_seed(seed, hours, hosts, shells, decoys):
    day = network_day(hours=hours, routers=2, hosts=hosts, flows_per_second=0.3, sources=200,
                      destinations=500, phone_home=2, shells=shells, decoys=decoys,
                      incident_gap="30 minutes", seed=seed)
    span_end = pd.Timestamp("2024-01-01", tz="UTC") + pd.Timedelta(hours=hours)
    for name in TABLES:
        assert day.tables()[name]["time"].max() < span_end, name
    counts = day.flows["dst"].value_counts()
    assert day.heavy_destinations["flows"].tolist() == counts.reindex(
        day.heavy_destinations["dst"]).fillna(0).astype(int).tolist()
    assert (day.phone_home["n_flows"] == day.flows["src"].value_counts().reindex(
        day.phone_home["src"]).to_numpy()).all()
    assert len(day.shells) == shells and len(day.decoys) == decoys
    per_process = day.syscalls.groupby("process").size()
    injected = pd.concat([day.shells, day.decoys])
    assert (per_process.reindex(injected["process"]).to_numpy() == injected["n_rows"]).all()
    assert (day.incidents["n_present"] <= day.incidents["n_reports"]).all()
