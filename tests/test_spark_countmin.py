"""Windowed Count-Min on Spark (issue 3): DistCM shards equal the core, coordinator, Theorem 7."""

from __future__ import annotations

import json
import math
import os
import re

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import functions as F

from windowkit.core.durations import FIRST_TIMESTAMP
from windowkit.core.sketches import CountMin
from windowkit.core.sketches.operator import merge_snapshots
from windowkit.spark.countmin import POSITION_MICROS

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000_000  # µs
PARAMS = {"window": 800, "algorithm": "splitter", "epsilon": 0.02, "delta": 0.25}
# the paper's DistCM period ceil(eps' N), eps' = e / width (not the default cadence)
PAPER_EVERY = math.ceil(math.e / math.ceil(math.e / 0.02) * 800)
SHARDS = 3


def zipf_items(n: int, n_ids: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_ids + 1)
    return rng.choice(n_ids, size=n, p=weights / weights.sum()).astype(np.int64)


def core_snapshots(sites: pd.DataFrame, finish: bool = True, **params) -> pd.DataFrame:
    """Run the core operator of every shard on its rows in ``position`` order (int µs), every
    shard's window ending at the last position of all shards (batch)."""
    from windowkit.spark.countmin import make_operator

    outs = []
    end = int(sites["position"].max())
    for shard, rows in sites.groupby("shard", sort=True):
        rows = rows.sort_values("position", kind="stable")
        op = make_operator(**params, end_time=end if finish else None)
        frame = pd.DataFrame({"time": rows["position"].to_numpy(np.int64),
                              "item": rows["item_key"].to_numpy(np.int64)})
        out = pd.concat([op.process(frame)] + ([op.finish()] if finish else []),
                        ignore_index=True)
        out["time"] //= POSITION_MICROS  # Spark reports the position itself
        outs.append(out.assign(shard=int(shard)))
    return canonical(pd.concat(outs, ignore_index=True))


def canonical(snaps: pd.DataFrame) -> pd.DataFrame:
    snaps = snaps[["shard", "seq", "n_seen", "time", "sketch"]].copy()
    if pd.api.types.is_datetime64_any_dtype(snaps["time"]):
        snaps["time"] = micros(snaps["time"])
    snaps["sketch"] = snaps["sketch"].map(bytes)
    snaps = snaps.astype({"shard": "int64", "seq": "int64", "n_seen": "int64", "time": "int64"})
    return snaps.sort_values(["shard", "seq"]).reset_index(drop=True)


def micros(ts: pd.Series) -> np.ndarray:
    ts = pd.to_datetime(ts, utc=True)
    return ts.astype("datetime64[us, UTC]").astype("int64").to_numpy()


@pytest.fixture(scope="module")
def stream() -> pd.DataFrame:
    items = zipf_items(6000, 300, seed=5)
    # t: sequence numbers (an integer column without time_unit is the items' order)
    return pd.DataFrame({"item": items, "t": 7 + np.arange(len(items), dtype=np.int64)})


@pytest.fixture(scope="module")
def batch_run(spark, stream):
    """Splitter over 3 shards (round robin over positions), batch; (snapshot DataFrame, shard
    assignment)."""
    from windowkit.spark.countmin import count_min_sites, windowed_count_min

    df = spark.createDataFrame(stream.sample(frac=1.0, random_state=1))  # disorder: time sorts
    snaps = windowed_count_min(df, "item", "t", shards=SHARDS, snapshot_every=PAPER_EVERY,
                               **PARAMS).cache()
    sites = count_min_sites(df, "item", "t", shards=SHARDS).toPandas()
    yield snaps, sites
    snaps.unpersist()


def test_batch_snapshots_equal_the_core_per_shard(batch_run):
    snaps, sites = batch_run
    got = snaps.toPandas()
    assert got["rejected"].isna().all()
    expected = core_snapshots(sites, snapshot_every=PAPER_EVERY, **PARAMS)
    assert sorted(set(sites["shard"])) == [0, 1, 2]
    assert len(expected) > 3 * 40  # snapshots every ceil(eps' N) = 16 samples
    pd.testing.assert_frame_equal(canonical(got), expected)


def test_merged_sketch_and_estimates_equal_the_core_merge(spark, batch_run, stream):
    from windowkit.spark.countmin import estimate_frequency, merge_count_min

    snaps, sites = batch_run
    merged = merge_count_min(snaps).first()
    finals = core_snapshots(sites, **PARAMS).groupby("shard").tail(1)
    core = merge_snapshots(finals["sketch"])
    spark_cm = CountMin.from_bytes(merged["sketch"])
    assert spark_cm.config == core.config and merged["shards"] == SHARDS
    np.testing.assert_allclose(spark_cm.counts, core.counts, rtol=0, atol=1e-9)
    assert merged["n_seen"] == len(stream)
    # one global window of N items, whatever the shards (issue #16); Splitter approximates it
    assert merged["window_count"] == pytest.approx(PARAMS["window"], rel=0.1)

    items = spark.createDataFrame(pd.DataFrame({"item": np.arange(-5, 320, dtype=np.int64)}))
    got = estimate_frequency(merged["sketch"], items, "item").toPandas().sort_values("item")
    keys = sites.drop_duplicates("item").set_index("item")["item_key"]
    seen = got[got["item"].isin(keys.index)]
    assert len(seen) > 250
    expected = core.estimate(keys.loc[seen["item"]].to_numpy(np.int64))
    assert seen["estimate"].tolist() == expected.tolist()
    assert (got["estimate"] >= 0).all()


def test_theorem7_coordinator_skew_is_at_most_k_eps_n(batch_run):
    # Each shard sends its matrix every ceil(eps' N) samples; a windowed cell changes by at most
    # 1 per sample, so the coordinator's merge of the periodic snapshots is within
    # k * ceil(eps' N) of the sum of the shards' current matrices (the final snapshots).
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from windowkit.spark.countmin import make_operator, merge_count_min

    snaps, _ = batch_run
    every = make_operator(**PARAMS, snapshot_every=PAPER_EVERY).snapshot_every
    assert make_operator(**PARAMS).snapshot_every is None  # default: at the end only
    last_seq = F.max("seq").over(Window.partitionBy("shard"))
    periodic = snaps.withColumn("last", last_seq).filter("seq < last").drop("last")
    assert periodic.count() == snaps.count() - SHARDS  # without the final snapshots
    coordinator = CountMin.from_bytes(merge_count_min(periodic).first()["sketch"]).counts
    nodes = CountMin.from_bytes(merge_count_min(snaps).first()["sketch"]).counts
    skew = np.abs(coordinator - nodes).max()
    assert 0 < skew <= SHARDS * every
    assert skew <= SHARDS * math.ceil(PARAMS["epsilon"] * PARAMS["window"])  # k eps N


def test_heavy_hitters_replay_every_coordinator_view(spark, batch_run, stream):
    from windowkit.spark.countmin import heavy_hitters, merge_count_min

    snaps, sites = batch_run
    phi = 0.05
    views = heavy_hitters(snaps, spark.createDataFrame(stream[["item"]]), phi).toPandas()
    n_snaps = len(snaps.select("seq").toPandas())
    assert views["view"].max() == n_snaps - 1 and views["view"].nunique() > n_snaps // 2
    assert (views["estimate"] >= views["threshold"]).all() and (views["estimate"] > 0).all()
    last = views[views["view"] == n_snaps - 1]
    latest = heavy_hitters(snaps, list(range(300)), phi, latest=True).toPandas()
    assert sorted(latest["item"]) == sorted(last["item"])
    merged = merge_count_min(snaps).first()
    keys = sites.drop_duplicates("item").set_index("item")["item_key"].sort_index()
    est = CountMin.from_bytes(merged["sketch"]).estimate(keys.to_numpy(np.int64))
    expected = keys.index[(est >= phi * merged["window_count"]) & (est > 0)]
    assert sorted(latest["item"]) == sorted(expected) and len(expected) >= 2
    assert (latest["threshold"] == phi * merged["window_count"]).all()


def test_count_based_without_time_follows_partition_order_per_site(spark):
    from windowkit.spark.countmin import count_min_sites, windowed_count_min

    rng = np.random.default_rng(2)
    pdf = pd.DataFrame({"item": [f"ip{i}" for i in zipf_items(900, 40, seed=3)],
                        "router": rng.choice(["r1", "r2", "r3"], 900)})
    pdf.loc[[10, 20], "item"] = None  # null items are rejected, not counted
    df = spark.createDataFrame(pdf).repartition(3)
    params = {"window": 100, "algorithm": "proportional", "epsilon": 0.05, "delta": 0.5,
              "snapshot_every": 25}
    out = windowed_count_min(df, "item", by="router", shards=2, **params).toPandas()
    sites = count_min_sites(df, "item", by="router", shards=2).toPandas()
    # the input's order, dense, one millisecond of the operators' clock per position
    assert sorted(sites["position"]) == list(range(0, 900_000, 1000))
    rejected = out[out["rejected"].notna()]
    assert rejected["rejected"].tolist() == ["malformed"] * 2
    assert all('"router"' in d and "wk_" not in d for d in rejected["detail"])
    assert sorted(rejected["shard"]) == sorted(sites.loc[sites["item"].isna(), "shard"])
    snaps = out[out["rejected"].isna()]
    expected = core_snapshots(sites[sites["item"].notna()], **params)
    pd.testing.assert_frame_equal(canonical(snaps), expected)
    routed = sites.groupby("router")["shard"].nunique()
    assert (routed == 1).all()  # a site id always goes to the same shard


def test_streaming_windows_end_at_the_watermark_on_every_shard(spark, tmp_path):
    # Three files, three micro-batches; rows out of order within the watermark delay. Every
    # shard's clock follows the global watermark, so the latest snapshots of all shards end at
    # one tick and their sum is the exact (Perfect) count of the global window of 60 ticks.
    from windowkit.spark.countmin import (
        item_key,
        latest_snapshots,
        merge_count_min,
        windowed_count_min,
    )

    n = 3000
    rng = np.random.default_rng(9)
    jitter = rng.integers(0, 3_000_000, n)  # up to 3 s of disorder, within late="10 seconds"
    pdf = pd.DataFrame({
        "site": np.array(["a", "b", "c", "d"])[np.arange(n) % 4],
        "item": zipf_items(n, 100, seed=9),
        "time": pd.to_datetime(T0 + np.arange(n) * 250_000 + jitter, unit="us", utc=True),
    })
    mover = pdf.tail(1).assign(time=pdf["time"].max() + pd.Timedelta(seconds=30))
    folder = tmp_path / "in"
    os.makedirs(folder)
    for i, piece in enumerate([pdf.iloc[: n // 2], pdf.iloc[n // 2 :], mover]):
        piece = piece.astype({"time": "datetime64[us, UTC]"})
        piece.to_parquet(folder / f"part-{i:03d}.parquet", index=False)
    params = {"window": 60, "unit": "ticks", "tick": "1 second", "algorithm": "perfect",
              "epsilon": 0.05, "delta": 0.25}
    schema = spark.read.parquet(str(folder)).schema
    source = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(folder))
    out = windowed_count_min(source, "item", "time", by="site", shards=2, late="10 seconds",
                             **params)
    query = out.writeStream.format("memory").queryName("cm_stream").outputMode("append").start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    got = spark.table("cm_stream")
    assert got.filter("rejected IS NOT NULL").count() == 0
    latest = latest_snapshots(got)
    rows = latest.toPandas()
    assert len(rows) == 2 and rows["time"].nunique() == 1  # both shards at the same step
    end_tick = int(micros(rows["time"])[0])
    end_tick //= 1_000_000
    # the window is the 60 ticks up to the last one, as [window_start, window_end)
    assert micros(rows["window_start"]).tolist() == [(end_tick - 59) * 1_000_000] * 2
    assert micros(rows["window_end"]).tolist() == [(end_tick + 1) * 1_000_000] * 2
    merged = CountMin.from_bytes(merge_count_min(got).first()["sketch"])
    ticks = micros(pdf["time"]) // 1_000_000
    inside = pdf[(ticks > end_tick - 60) & (ticks <= end_tick)]
    assert len(inside) > 100
    ref = CountMin(merged.depth, merged.width)
    ref.update(inside["item"].to_numpy(np.int64))
    keys = spark.createDataFrame(pd.DataFrame({"item": np.arange(100, dtype=np.int64)}))
    hashed = keys.select("item", item_key("item", keys.schema["item"].dataType).alias("k"))
    lookup = hashed.toPandas().set_index("item")["k"]
    truth = inside.groupby("item").size().reindex(range(100), fill_value=0)
    est = merged.estimate(lookup.loc[range(100)].to_numpy(np.int64))
    assert (est >= truth.to_numpy()).all()
    assert merged.counts.sum() == pytest.approx(len(inside) * merged.depth)


def test_every_site_runs_alone_in_its_own_spark_group(spark):
    # The site is the adapter's explicit shard, so with many shards no two sites share a Spark
    # group (hence one core operator): every shard's snapshots are exactly its own core run.
    from windowkit.spark.countmin import count_min_sites, windowed_count_min

    shards = 16
    pdf = pd.DataFrame({"item": zipf_items(1200, 30, seed=4),
                        "router": [f"r{i % 40}" for i in range(1200)],
                        "t": T0 + np.arange(1200, dtype=np.int64)})
    df = spark.createDataFrame(pdf)
    params = {"window": 50, "algorithm": "simple", "epsilon": 0.1, "delta": 0.5,
              "snapshot_every": 4}
    out = windowed_count_min(df, "item", "t", by="router", shards=shards, **params).toPandas()
    sites = count_min_sites(df, "item", "t", by="router", shards=shards).toPandas()
    assert out["rejected"].isna().all()
    assert sites["shard"].nunique() >= 12 and set(out["shard"]) == set(sites["shard"])
    expected = core_snapshots(sites, **params)
    pd.testing.assert_frame_equal(canonical(out), expected)
    per_shard = sites.groupby("shard").size()
    finals = out.groupby("shard")["n_seen"].max()
    assert finals.sort_index().tolist() == per_shard.sort_index().tolist()


def test_bad_parameters_raise_before_spark_runs(spark):
    from windowkit.spark.countmin import heavy_hitters, windowed_count_min

    df = spark.createDataFrame([(1, 1)], "item long, t long")
    cases = [
        ({"epsilon": 1.5}, r"`epsilon` must be in \(0, 1\); got 1.5"),
        ({"epsilon": 0.0}, r"`epsilon` must be in \(0, 1\); got 0.0"),
        ({"delta": 1}, r"`delta` must be in \(0, 1\); got 1"),
        ({"window": 0}, r"`window` must be an integer in \[1, .*\]; got 0"),
        ({"algorithm": "exact"}, r"`algorithm` must be one of 'splitter', .*; got 'exact'"),
        ({"algorithm": "simple", "tau": 0.1}, r"`tau` is a parameter of algorithm='splitter'"),
        ({"unit": "ticks"}, r"`tick` is required with unit='ticks'"),
        ({"tick": "1 second"}, r"`tick` is only for unit='ticks'"),
        ({"shards": 0}, r"`shards` must be an integer in \[1, inf\); got 0"),
        ({"snapshot_every": 0}, r"`snapshot_every` must be an integer in \[1, inf\); got 0"),
    ]
    for kwargs, match in cases:
        params = {"window": 10, **kwargs}
        with pytest.raises(ValueError, match=match):
            windowed_count_min(df, "item", "t", **params)
    stream = spark.readStream.format("rate").load()
    with pytest.raises(ValueError, match="`time` is required for a streaming DataFrame"):
        windowed_count_min(stream, "value", window=10)
    with pytest.raises(ValueError, match="needs each row's position in the stream"):
        windowed_count_min(stream, "value", "timestamp", window=10)
    with pytest.raises(ValueError, match="`time_unit` is required"):
        windowed_count_min(df, "item", "t", window=10, unit="ticks", tick="1 second")
    with pytest.raises(ValueError, match=r"`phi` must be in \(0, 1\]; got 0"):
        heavy_hitters(df, [1], 0)


def test_the_window_given_is_the_window_estimated_whatever_the_shards_issue16(spark):
    # --window was per shard, and shards defaulted to the core count: the same command estimated
    # the last 5,000 items on one machine and the last 10,000 on another. The sum of the shards'
    # matrices is now the matrix of the global last N items, for 1, 2 or 4 shards alike (exactly
    # for the linear variants; Splitter within its approximation of the same window).
    from windowkit.spark.countmin import merge_count_min, windowed_count_min

    items = zipf_items(3000, 60, seed=11)
    df = spark.createDataFrame(pd.DataFrame({"item": items})).repartition(3)
    window = 700
    for algorithm in ("proportional", "simple", "splitter"):
        counts = []
        for shards in (1, 2, 4):
            snaps = windowed_count_min(df, "item", window=window, shards=shards,
                                       algorithm=algorithm, epsilon=0.05, delta=0.25)
            merged = merge_count_min(snaps).first()
            assert merged["shards"] == shards and merged["n_seen"] == len(items)
            counts.append(CountMin.from_bytes(merged["sketch"]).counts)
        if algorithm == "splitter":
            for c in counts:  # each row of the matrix sums to the window's count
                assert c.sum(axis=1) == pytest.approx(np.full(c.shape[0], window), rel=0.1)
        else:
            for c in counts[1:]:
                np.testing.assert_allclose(c, counts[0], rtol=0, atol=1e-6)
    assert counts[0].sum() > 0


def test_heavy_hitters_latest_picks_each_shards_snapshot_in_the_jvm_issue16(spark, batch_run):
    # heavy_hitters(latest=True) sent every snapshot to one Python group (an Arrow allocation
    # over 2 GiB on 10 M rows): the latest snapshot of each shard is now chosen before Python.
    from windowkit.spark.countmin import heavy_hitters

    snaps, _ = batch_run
    assert snaps.count() > 3 * SHARDS  # periodic snapshots: many per shard
    out = heavy_hitters(snaps, list(range(300)), 0.05, latest=True)
    plan = out._jdf.queryExecution().optimizedPlan().toString()
    python = plan.index("FlatMapGroupsInPandas")
    assert "max_by" in plan[python:]  # below the Python node in the printed tree: its input
    assert out.select("view").distinct().count() == 1


def _python_nodes_run(df) -> int:
    """How many Python map steps ``df``'s final physical plan runs (a reused shuffle's
    Python steps are not run again)."""
    df.collect()
    plan = df._jdf.queryExecution().executedPlan().toString()
    return plan[:plan.index("\n+- == Initial Plan ==")].count("MapInArrow")


def test_heavy_hitters_latest_runs_the_sketching_once(spark):
    # The latest view's candidates were joined to the distinct replay ranges, one constant
    # range, which Spark pruned down to the snapshots' Python steps and ran them again.
    from windowkit.spark.countmin import heavy_hitters, windowed_count_min

    df = spark.createDataFrame([(i % 7, i) for i in range(400)], "item long, t long")
    snaps = windowed_count_min(df, "item", "t", window=50, algorithm="splitter", shards=2)
    latest = heavy_hitters(snaps, list(range(7)), 0.1, latest=True)
    assert _python_nodes_run(latest) == _python_nodes_run(snaps) > 0
    assert latest.count() > 0


def test_parts_built_in_python_stay_where_the_rows_are_read(spark, capsys):
    """Perfect's parts are built per input partition, then shuffled to the one task that
    finishes them: a coalesce to that task would also pull the scan and the building into it."""
    from windowkit.spark.countmin import merge_count_min, windowed_count_min

    df = spark.range(0, 4000, numPartitions=4).selectExpr("id % 7 AS item", "id AS t")
    snaps = windowed_count_min(df, "item", "t", window=5, unit="ticks", tick=20_000,
                               time_unit="ms", algorithm="perfect", shards=2)
    snaps.explain()
    plan = capsys.readouterr().out
    assert "MapInArrow" in plan and "Coalesce" not in plan
    assert merge_count_min(snaps).first()["n_seen"] == 4000


@pytest.mark.parametrize("algorithm", ["simple", "proportional", "perfect"])
def test_mergeable_sketches_merge_partition_parts_into_each_sites_core_run(spark, algorithm):
    # With the default cadence the linear variants sketch each input partition where it is read
    # and merge the parts (issue #16, point 7: no shuffle of rows). Every site's snapshot must
    # still be exactly its core operator's over all its rows, whatever the partitioning.
    from windowkit.spark.countmin import count_min_sites, windowed_count_min

    rng = np.random.default_rng(7)
    n = 4000
    pdf = pd.DataFrame({"item": zipf_items(n, 80, seed=8).astype(object),
                        # sequence numbers with gaps and disorder across partitions
                        "t": rng.permutation(np.cumsum(rng.integers(1, 4, n)))})
    pdf.loc[[5, 77, 3000], "item"] = None  # malformed, set aside
    params = {"window": 300, "algorithm": algorithm, "epsilon": 0.05, "delta": 0.25}
    sites_df = spark.createDataFrame(pdf)
    sites = count_min_sites(sites_df, "item", "t", shards=3).toPandas()
    expected = core_snapshots(sites[sites["item"].notna()], **params)
    for partitions in (1, 5):
        df = spark.createDataFrame(pdf).repartition(partitions)
        out = windowed_count_min(df, "item", "t", shards=3, **params).toPandas()
        pd.testing.assert_frame_equal(canonical(out[out["rejected"].isna()]), expected)
        rejected = out[out["rejected"].notna()]
        assert rejected["rejected"].tolist() == ["malformed"] * 3
        assert sorted(rejected["detail"].map(lambda d: json.loads(d)["t"])) == sorted(
            pdf.loc[[5, 77, 3000], "t"].tolist())


@pytest.mark.parametrize("algorithm", ["simple", "proportional", "perfect"])
def test_mergeable_sketches_on_event_time_ticks_equal_the_core(spark, algorithm):
    from windowkit.spark.countmin import count_min_sites, windowed_count_min

    rng = np.random.default_rng(9)
    n = 3000
    pdf = pd.DataFrame({"item": zipf_items(n, 50, seed=10),
                        "ts": pd.to_datetime(T0 + 1000 * rng.integers(0, 600_000, n), unit="us",
                                             utc=True)})
    params = {"window": 60, "unit": "ticks", "tick": "1 second", "algorithm": algorithm,
              "epsilon": 0.05, "delta": 0.25}
    df = spark.createDataFrame(pdf).repartition(4)
    out = canonical(windowed_count_min(df, "item", "ts", shards=2, **params).toPandas())
    sites = count_min_sites(df, "item", "ts", shards=2, unit="ticks").toPandas()
    expected = core_snapshots(sites, **params)
    expected["time"] *= POSITION_MICROS  # a timestamp in µs, not a position
    pd.testing.assert_frame_equal(out, expected)


def test_rows_tied_at_one_instant_give_the_same_snapshots_whatever_the_input_order(spark):
    """Rows at one instant go to one site, and a periodic snapshot cuts through them: which
    of them it counts must not depend on how the input was read (the site takes them in an
    order of their contents)."""
    from windowkit.spark.countmin import windowed_count_min

    rng = np.random.default_rng(21)
    n = 240
    rows = pd.DataFrame({"item": [f"i{k}" for k in rng.integers(0, 12, n)],
                         "ts": pd.to_datetime(T0 + 1_000_000 * rng.integers(0, 16, n),
                                              unit="us", utc=True)})
    params = {"window": 6, "unit": "ticks", "tick": "1 second", "algorithm": "splitter",
              "snapshot_every": 3, "shards": 2, "epsilon": 0.2, "delta": 0.25}
    found = []
    for order, parts in [(rows, 3), (rows[::-1], 1), (rows.sort_values("item", kind="stable"), 2)]:
        df = spark.createDataFrame(order.reset_index(drop=True)).repartition(parts)
        found.append(canonical(windowed_count_min(df, "item", "ts", **params).toPandas()))
    assert len(found[0]) >= n // 3  # periodic snapshots of both sites
    for other in found[1:]:
        pd.testing.assert_frame_equal(other, found[0])


@pytest.mark.parametrize("algorithm", ["simple", "proportional"])
def test_blocks_wider_than_the_clock_still_equal_the_core(spark, algorithm):
    # A block of 2**37 one-day ticks spans more µs than a long holds: the JVM path must tell
    # the last blocks' rows apart without a block's first time.
    from windowkit.spark.countmin import count_min_sites, windowed_count_min

    rng = np.random.default_rng(11)
    n = 500
    pdf = pd.DataFrame({"item": zipf_items(n, 30, seed=12),
                        "ts": pd.to_datetime(T0 + 1000 * rng.integers(0, 10**9, n), unit="us",
                                             utc=True)})
    params = {"window": 2**37, "unit": "ticks", "tick": "1 day", "algorithm": algorithm,
              "epsilon": 0.1, "delta": 0.25}
    df = spark.createDataFrame(pdf).repartition(2)
    snaps = windowed_count_min(df, "item", "ts", shards=2, **params)
    # the window reaches back beyond year 1 (pandas' nanoseconds do not): it starts there
    assert {r[0] for r in snaps.select(F.unix_micros("window_start")).collect()} == {
        FIRST_TIMESTAMP}
    out = canonical(snaps.drop("window_start").toPandas())
    sites = count_min_sites(df, "item", "ts", shards=2, unit="ticks").toPandas()
    expected = core_snapshots(sites, **params)
    expected["time"] *= POSITION_MICROS
    pd.testing.assert_frame_equal(out, expected)


def test_event_times_before_the_epoch_are_refused_by_every_path_alike(spark):
    # A time-based sketch's clock starts at tick 0: the core refuses earlier ticks, and so do
    # the JVM-sketched path (Simple, Proportional) and the Python one (Perfect).
    from windowkit.spark.countmin import windowed_count_min

    df = spark.sql("SELECT id % 5 AS item, timestamp_seconds(-100000 + id) AS ts FROM range(500)")
    for algorithm in ("simple", "proportional", "perfect"):
        with pytest.raises(Exception, match="at least now=0"):
            windowed_count_min(df, "item", "ts", window=60, unit="ticks", tick="1 second",
                               algorithm=algorithm, shards=2).collect()


def test_a_site_whose_rows_all_left_the_window_still_sends_its_empty_window(spark):
    # Only rows of the last window blocks are sketched on the mergeable path; a site (here the
    # router that stopped early) with none of them must still send the snapshot its core
    # operator sends: its clock moved to the input's end, nothing left in the window.
    from windowkit.spark.countmin import count_min_sites, windowed_count_min

    n = 2000
    pdf = pd.DataFrame({"item": zipf_items(n, 40, seed=12), "t": np.arange(n, dtype=np.int64),
                        "router": np.where(np.arange(n) < 300, "early", "late")})
    params = {"window": 200, "algorithm": "proportional", "epsilon": 0.05, "delta": 0.25}
    df = spark.createDataFrame(pdf).repartition(3)
    out = canonical(windowed_count_min(df, "item", "t", by="router", shards=8, **params)
                    .toPandas())
    sites = count_min_sites(df, "item", "t", by="router", shards=8).toPandas()
    assert sites.groupby("router")["shard"].first().nunique() == 2
    pd.testing.assert_frame_equal(out, core_snapshots(sites, **params))
    early = sites.loc[sites["router"] == "early", "shard"].iloc[0]
    assert CountMin.from_bytes(out.loc[out["shard"] == early, "sketch"].iloc[0]).counts.sum() == 0


def test_many_sites_are_counted_by_a_group_by_and_still_equal_the_core(spark):
    # Many sites (more than the input's partitions and the shuffle's) still give every site's
    # core snapshot.
    from windowkit.spark.countmin import count_min_sites, windowed_count_min

    shards = 80
    pdf = pd.DataFrame({"item": zipf_items(3000, 60, seed=13),
                        "t": np.arange(3000, dtype=np.int64)})
    params = {"window": 400, "algorithm": "proportional", "epsilon": 0.05, "delta": 0.25}
    df = spark.createDataFrame(pdf).repartition(3)
    out = canonical(windowed_count_min(df, "item", "t", shards=shards, **params).toPandas())
    sites = count_min_sites(df, "item", "t", shards=shards).toPandas()
    assert sites["shard"].nunique() > 64
    pd.testing.assert_frame_equal(out, core_snapshots(sites, **params))


@pytest.mark.parametrize(("seed", "depth", "width"), [(0, 1, 1), (7, 4, 2719), (123456, 6, 97),
                                                      (2**31 - 1, 3, 5000)])
def test_the_spark_family_builds_the_matrix_sparks_count_min_sketch_builds(spark, seed, depth,
                                                                           width):
    # Simple's and Proportional's batch sketches are built by Spark's count_min_sketch in the
    # JVM and read with the core's "spark" family: the row multipliers must be
    # java.util.Random's and the matrix the JVM's, cell for cell, for any long key.
    from pyspark.sql import functions as F

    from windowkit.core.sketches._hashing import spark_multipliers
    from windowkit.spark.countmin import spark_count_min_counts

    java = spark.sparkContext._jvm.java.util.Random(seed)
    assert spark_multipliers(seed, depth).tolist() == [java.nextInt(2**31 - 1)
                                                       for _ in range(depth)]
    rng = np.random.default_rng(seed % 1000)
    keys = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 3000, dtype=np.int64),
                           rng.integers(0, 50, 2000), [0, -1, 2**63 - 1, -(2**63)]])
    df = spark.createDataFrame(pd.DataFrame({"k": keys.astype(np.int64)}))
    eps, confidence = 2 / (width - 0.5), 1 - 2.0 ** -(depth - 0.5)
    blob = df.agg(F.count_min_sketch("k", F.lit(eps), F.lit(confidence), F.lit(seed))).first()[0]
    core = CountMin(depth, width, seed=seed, hashing="spark")
    core.update(keys)
    assert np.array_equal(spark_count_min_counts(bytes(blob), core.config), core.counts)
    other = CountMin(depth, width, seed=seed + 1 if seed < 2**31 - 1 else 0, hashing="spark")
    with pytest.raises(ValueError, match="does not hash like"):
        spark_count_min_counts(bytes(blob), other.config)
    with pytest.raises(ValueError, match="not a version-1 Spark Count-Min sketch"):
        spark_count_min_counts(bytes(blob)[:-8], core.config)


def test_simple_and_proportional_batch_sketches_never_send_rows_to_python(spark, monkeypatch):
    # Their matrices come from Spark's count_min_sketch in the JVM; Perfect's rows still go
    # through Python. A failure in the Python path must not reach the JVM-sketched variants.
    import windowkit.spark.countmin as cm
    import windowkit.spark.mergeable as mergeable

    def refuse(*args, **kwargs):
        msg = "rows sent to Python"
        raise AssertionError(msg)

    monkeypatch.setattr(mergeable, "_build_parts", refuse)
    df = spark.createDataFrame([(i % 5, i) for i in range(300)], "item long, t long")
    for algorithm in ("simple", "proportional"):
        snaps = cm.windowed_count_min(df, "item", "t", window=50, shards=2, algorithm=algorithm)
        assert cm.merge_count_min(snaps).first()["n_seen"] == 300
    snaps = cm.windowed_count_min(df, "item", "t", window=50, shards=2, algorithm="perfect")
    with pytest.raises(Exception, match="rows sent to Python"):
        snaps.collect()


@pytest.mark.parametrize("algorithm", ["simple", "proportional"])
def test_sketches_too_deep_for_sparks_confidence_are_made_in_python_alike(spark, algorithm):
    # Spark's count_min_sketch takes a confidence 1 - 2**-depth, which a double cannot hold
    # beyond about 50 rows: past 40 rows the rows are sketched in Python instead, with the
    # same snapshots as the core run.
    from windowkit.spark.countmin import count_min_sites, windowed_count_min

    pdf = pd.DataFrame({"item": zipf_items(1500, 30, seed=14),
                        "t": np.arange(1500, dtype=np.int64)})
    params = {"window": 400, "algorithm": algorithm, "epsilon": 0.5, "delta": 1e-13}
    df = spark.createDataFrame(pdf).repartition(2)
    out = canonical(windowed_count_min(df, "item", "t", shards=2, **params).toPandas())
    assert CountMin.from_bytes(out["sketch"].iloc[0]).depth == 44
    sites = count_min_sites(df, "item", "t", shards=2).toPandas()
    pd.testing.assert_frame_equal(out, core_snapshots(sites, **params))


def test_merging_snapshots_is_one_spark_aggregation_whatever_their_partitioning(spark):
    # merge_count_min is a plain Spark aggregation: the same row for the snapshots as
    # windowed_count_min returned them and for any repartitioning of them (the matrices are
    # summed in shard order, so float sums do not depend on the order Spark collects them in).
    from windowkit.spark.countmin import merge_count_min, windowed_count_min

    rng = np.random.default_rng(4)
    pdf = pd.DataFrame({"item": zipf_items(2000, 40, seed=6),
                        "ts": pd.to_datetime(T0 + 1000 * rng.integers(0, 600_000, 2000),
                                             unit="us", utc=True)})
    snaps = windowed_count_min(spark.createDataFrame(pdf), "item", "ts", window=60,
                               unit="ticks", tick="1 second", algorithm="proportional",
                               shards=3, epsilon=0.05, delta=0.25).cache()
    direct = merge_count_min(snaps).collect()
    distributed = merge_count_min(snaps.repartition(3)).collect()
    assert [tuple(r) for r in direct] == [tuple(r) for r in distributed]
    assert direct[0]["shards"] == 3 and direct[0]["n_seen"] == 2000
    times = [r["time"] for r in snaps.filter("rejected IS NULL").collect()]
    # a site whose last row is in the input's last tick reports that row's own time
    assert len(set(times)) > 1
    assert direct[0]["time"] == max(times)
    snaps.unpersist()


def _jobs_run(spark, group: str, call) -> tuple[object, list[int]]:
    """``call()`` and the ids of the Spark jobs it ran (classic sessions: the test's own
    handle on the scheduler)."""
    sc = spark.sparkContext
    sc.setJobGroup(group, "must run no job")
    try:
        result = call()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return result, list(sc.statusTracker().getJobIdsForGroup(group))


@pytest.mark.parametrize(("algorithm", "time", "unit"), [
    ("proportional", "t", "samples"), ("simple", None, "samples"), ("perfect", "ts", "ticks"),
    ("splitter", "t", "samples"), ("proportional", "ts", "samples")])
def test_count_min_functions_run_no_spark_job_until_the_users_action_issue35(
        spark, tmp_path, algorithm, time, unit):
    # windowed_count_min ran its sketches when called (and looked up the input's last step,
    # each partition's rows, the last position): now every function only builds a plan. The
    # input's files are deleted after the calls: the user's action is the first to read them.

    from windowkit.spark.countmin import (
        estimate_frequency,
        heavy_hitters,
        merge_count_min,
        windowed_count_min,
    )

    path = str(tmp_path / "in")
    pdf = pd.DataFrame({"item": zipf_items(3000, 30, seed=1), "t": np.arange(3000),
                        "ts": pd.to_datetime(T0 + 1_000_000 * np.arange(3000), unit="us",
                                             utc=True).astype("datetime64[us, UTC]")})
    pdf.to_parquet(path, row_group_size=500)
    df = spark.read.parquet(path)
    params = {"window": 200, "algorithm": algorithm, "shards": 2, "epsilon": 0.05,
              "delta": 0.25, "unit": unit, "tick": "1 second" if unit == "ticks" else None}

    def build():
        snaps = windowed_count_min(df, "item", time, **params)
        merged = merge_count_min(snaps)
        return (snaps, merged, estimate_frequency(merged, df, "item"),
                heavy_hitters(snaps, df, 0.1), heavy_hitters(snaps, [1, 2], 0.1, latest=True))

    built, jobs = _jobs_run(spark, f"wk-lazy-{algorithm}-{time}-{unit}", build)
    assert jobs == []
    heavy = built[4].collect()  # it runs when asked, on the input as it is then
    assert {r["item"] for r in heavy} <= {1, 2} and len(heavy) >= 1
    os.remove(path)
    for frame in built[:4]:  # (a plan run once keeps its shuffle files: not built[4])
        with pytest.raises(Exception, match="(?i)file|path"):
            frame.collect()


def test_no_module_level_cache_couples_the_count_min_functions_issue35():
    # A WeakKeyDictionary keyed by the returned DataFrame let merge_count_min sum the rows
    # windowed_count_min had computed; each function now stands on its own plan.
    import importlib
    import pkgutil
    import weakref

    import windowkit.spark.countmin as package

    names = [package.__name__] + [f"{package.__name__}.{m.name}"
                                  for m in pkgutil.iter_modules(package.__path__)]
    assert len(names) > 4  # one module per concept
    for name in names:
        module = importlib.import_module(name)
        caches = [k for k, v in vars(module).items()
                  if isinstance(v, weakref.WeakKeyDictionary | weakref.WeakValueDictionary)]
        assert caches == [], name


def _driver_replay(snaps: pd.DataFrame, keys: np.ndarray, phi: float) -> pd.DataFrame:
    """Every coordinator view, replayed on the driver in (time, shard, seq) order."""
    from windowkit.core.sketches.count_min import estimate_counts

    snaps = snaps.sort_values(["time", "shard", "seq"], kind="stable").reset_index(drop=True)
    current, rows = {}, []
    for view, r in enumerate(snaps.itertuples(index=False)):
        cm = CountMin.from_bytes(bytes(r.sketch))
        current[r.shard] = np.asarray(cm.counts, dtype=np.float64)
        total = np.sum(list(current.values()), axis=0)
        window_count = float(total.sum(axis=1).mean())
        est = estimate_counts(total, cm.config.columns(keys))
        for k, e in zip(keys.tolist(), est.tolist(), strict=True):
            if e >= phi * window_count and e > 0:
                rows.append((view, int(r.time), int(r.shard), k, e, window_count,
                             phi * window_count))
    return pd.DataFrame(rows, columns=["view", "time", "shard", "item_key", "estimate",
                                       "window_count", "threshold"])


def test_heavy_hitters_replay_ranges_of_views_in_parallel_like_one_replay_issue35(
        spark, batch_run, stream):
    # All snapshots went to one Python group; the views are now replayed in ranges, each group
    # starting from the latest snapshot of every shard before its range, with the very rows of
    # one replay of all views.
    from pyspark.sql import functions as F

    from windowkit.spark.countmin import heavy_hitters
    from windowkit.spark.countmin.queries import RANGE_VIEWS, replay_groups

    snaps, sites = batch_run
    n_snaps = snaps.count()
    keys = spark.createDataFrame([([1, 2],)], "wk_keys array<long>")
    groups, _ = replay_groups(snaps, keys)
    sizes = groups.filter("wk_role = 1").groupBy("wk_range").count().toPandas()
    assert len(sizes) == -(-n_snaps // RANGE_VIEWS) > 1
    assert sizes["count"].max() <= RANGE_VIEWS and sizes["count"].sum() == n_snaps
    starts = groups.filter("wk_role = 0").groupBy("wk_range").agg(
        F.countDistinct("shard").alias("n")).toPandas()
    assert (starts["n"] == SHARDS).all() and len(starts) == len(sizes) - 1

    phi = 0.05
    got = heavy_hitters(snaps, spark.createDataFrame(stream[["item"]]), phi).toPandas()
    item_keys = sites.drop_duplicates("item").set_index("item")["item_key"]
    expected = _driver_replay(snaps.filter("rejected IS NULL").toPandas(),
                              item_keys.to_numpy(np.int64), phi)
    got["item_key"] = item_keys.loc[got["item"]].to_numpy()
    order = ["view", "item_key"]
    got = got[expected.columns].sort_values(order).reset_index(drop=True)
    expected = expected.sort_values(order).reset_index(drop=True)
    assert len(expected) > n_snaps
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)


def test_estimates_from_a_sketch_dataframe_are_made_in_the_jvm_like_the_core(spark):
    # A merged sketch given as a DataFrame is not collected: the JVM hashes every item with
    # Spark's Count-Min family in long arithmetic. Same estimates as the core's, for any key.
    from windowkit.spark.countmin import estimate_frequency, merge_count_min, windowed_count_min

    rng = np.random.default_rng(21)
    values = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 400, dtype=np.int64),
                             [0, -1, 2**63 - 1, -(2**63)], rng.integers(0, 40, 600)])
    df = spark.createDataFrame(pd.DataFrame({"item": values}))
    merged = merge_count_min(windowed_count_min(df, "item", window=500, shards=3,
                                                algorithm="proportional", epsilon=0.01))
    blob = merged.first()["sketch"]
    queries = spark.createDataFrame(pd.DataFrame({"item": np.concatenate([values, [7, 8]])}))
    from_frame = estimate_frequency(merged, queries, "item", "e").toPandas()
    from_bytes = estimate_frequency(blob, queries, "item", "e").toPandas()
    assert from_frame["e"].tolist() == from_bytes["e"].tolist()
    assert from_frame["e"].sum() > 0
    two = merged.unionByName(merged)
    with pytest.raises(Exception, match="exactly one sketch row; got 2"):
        estimate_frequency(two, queries, "item").collect()


@pytest.mark.parametrize("unit", ["samples", "ticks"])
def test_the_last_blocks_are_kept_where_the_file_is_read_issue35(spark, tmp_path, capsys, unit):
    """The mergeable pass's filter on the last blocks reaches the Parquet scan (a scalar
    subquery in its pushed filters), so the row groups before them are skipped, lazily; the
    snapshots are those of the same rows in memory, where nothing can be pushed."""
    from windowkit.spark.countmin import merge_count_min, windowed_count_min

    n = 1000
    pdf = pd.DataFrame({"item": np.arange(n) % 7, "t": np.arange(n, dtype=np.int64)})
    path = str(tmp_path / "rows.parquet")
    pdf.to_parquet(path, row_group_size=100)
    params = ({"window": 100} if unit == "samples"
              else {"window": 5, "unit": "ticks", "tick": 20_000, "time_unit": "ms"})

    def merged(df):
        snaps = windowed_count_min(df, "item", "t", algorithm="simple", shards=2, **params)
        return snaps, merge_count_min(snaps).first()

    snaps, from_file = merged(spark.read.parquet(path))
    snaps.explain()
    assert "GreaterThanOrEqual(t,ScalarSubquery" in capsys.readouterr().out
    _, in_memory = merged(spark.createDataFrame(pdf))
    assert from_file.asDict() == in_memory.asDict()
    assert from_file["n_seen"] == n


@pytest.mark.parametrize(("shards", "shuffled"), [(2, False), (80, True)])
def test_few_shards_rows_are_counted_without_a_shuffle_issue35(spark, capsys, shards,
                                                              shuffled):
    """The mergeable pass's summary counts the rows of a few shards by conditions in one
    global aggregation (no exchange by shard); many shards are grouped by shard."""
    from windowkit.spark.countmin import windowed_count_min

    df = spark.createDataFrame([(i % 7, i) for i in range(200)], "item long, t long")
    windowed_count_min(df, "item", "t", window=50, algorithm="simple", shards=shards).explain()
    plan = capsys.readouterr().out
    assert "wk_site" in plan
    assert bool(re.search(r"hashpartitioning\(wk_site#\d+, \d+\)", plan)) == shuffled


def test_tick_windows_are_those_of_spark_window_with_its_counts_issue36(spark):
    # Readings every 7 s for 40 minutes and some exactly on minute bounds: the window of the
    # merged sketch is the window(time, 5 minutes, 1 minute) that ends with the last tick, and
    # (Perfect, a sketch wide enough for five items to never collide) its estimates are
    # window()'s counts in that window. Every snapshot's window is one of window()'s.
    import datetime as dt

    from windowkit.spark.countmin import (
        estimate_frequency,
        heavy_hitters,
        merge_count_min,
        windowed_count_min,
    )

    t0 = dt.datetime(2024, 3, 1, 12, 0, 0)
    times = [t0 + dt.timedelta(seconds=7 * k) for k in range(343)]
    times += [t0 + dt.timedelta(minutes=m) for m in (30, 36, 39)]  # on bounds
    rows = [("abcde"[(k * k) % 5], t) for k, t in enumerate(times)]
    df = spark.createDataFrame(rows, "item string, time timestamp")
    snaps = windowed_count_min(df, "item", "time", window=5, unit="ticks", tick="1 minute",
                               algorithm="perfect", epsilon=0.001, shards=2)
    merged = merge_count_min(snaps).first()
    assert merged["window_end"] == dt.datetime(2024, 3, 1, 12, 40)  # the last row: 12:39:54
    assert merged["window_start"] == dt.datetime(2024, 3, 1, 12, 35)
    by_window = (df.groupBy(F.window("time", "5 minutes", "1 minute"), "item").count()
                 .filter(F.col("window.end") == F.lit(merged["window_end"])))
    expected = {r["item"]: r["count"] for r in by_window.collect()}
    assert {r["window"]["start"] for r in by_window.collect()} == {merged["window_start"]}
    items = spark.createDataFrame([(x,) for x in "abcde"], "item string")
    got = {r["item"]: r["estimate"] for r in
           estimate_frequency(spark.createDataFrame([merged]), items, "item").collect()}
    assert got == {x: expected.get(x, 0) for x in "abcde"} and sum(got.values()) > 0
    for r in snaps.filter("rejected IS NULL").collect():
        assert r["window_end"] - r["window_start"] == dt.timedelta(minutes=5)
        assert r["window_end"] - dt.timedelta(minutes=1) <= r["time"] < r["window_end"]
        assert r["window_start"].second == r["window_start"].microsecond == 0
    views = heavy_hitters(snaps, list("abcde"), 0.1, latest=True).collect()
    assert {(v["window_start"], v["window_end"]) for v in views} == {
        (merged["window_start"], merged["window_end"])}


def test_sample_windows_are_the_last_positions_up_to_the_snapshots_issue36(spark):
    from windowkit.spark.countmin import windowed_count_min

    df = spark.createDataFrame([(i % 3, i) for i in range(40)], "item int, t long")
    snaps = windowed_count_min(df, "item", "t", window=6, shards=2, snapshot_every=5)
    for r in snaps.collect():
        assert (r["window_start"], r["window_end"]) == (r["time"] - 5, r["time"] + 1)


def test_the_last_blocks_rows_and_their_blocks_cost_the_same_plan_whatever_the_lag(spark,
                                                                                   capsys):
    # Perfect's window of N ticks is N blocks: the rows of the last ones are kept by one
    # comparison and each row's block is one division, however many blocks (a branch per
    # block outgrew the JVM's 64 KB method limit at 100, and Spark then interpreted the plan).
    # The plan's shape is what is checked here, never its time; negative times included.
    from windowkit.core.mergeable import MergePlan
    from windowkit.spark.event_time import event_time
    from windowkit.spark.mergeable import _recent, _summary

    times = [1000 * i - 50_000 for i in range(300)]
    good = spark.createDataFrame([(i % 2, t, t) for i, t in enumerate(times)],
                                 "wk_site int, time long, wk_raw_time long")
    clock = event_time(good, "wk_raw_time", "us")
    blocks = set()
    for lag in (1, 99, 299):
        plan = MergePlan(1000, 1, lag)
        recent = _recent(good, plan, _summary(good, plan, 2), clock)
        rows = recent.collect()
        assert sorted(r.time for r in rows) == times[max(0, 299 - lag):]
        assert all(r.wk_block == r.time // 1000 for r in rows)
        recent.explain()
        # the projection that finds a row's block, expression ids aside
        line = next(x for x in capsys.readouterr().out.splitlines() if "AS wk_block" in x)
        blocks.add(re.sub(r"#\d+L?", "", line))
    assert len(blocks) == 1
