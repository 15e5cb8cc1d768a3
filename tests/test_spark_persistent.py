"""Persistent items on Spark (issue 4): batch and streaming against the core and the exact SQL.

Slots are 10 seconds, aligned on the epoch; with ``epsilon * window_slots = 2`` the sampling
probability is 1 and the sketch must equal the exact answer::

    slot       0    1    2    3    4   ...
    item a     x    x    .    x    x
    window (n=4) ending at slot 3 = slots [0, 3]: a is in 3 of them
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from windowkit.core.persistence.operator import PersistentItemsOperator
from windowkit.core.sketch_defaults import DEFAULT_PERSISTENCE_DELTA
from windowkit.reference import persistence as ref
from windowkit.spark.chunk_store import SPLIT_AT
from windowkit.spark.persistent import exact_persistent_items, persistent_items
from windowkit.spark.rejected import split_rejected

pytestmark = pytest.mark.spark

SLOT_US = 10_000_000
T0 = 1_700_000_000 * 1_000_000  # an epoch-aligned start (multiple of the slot)


def make_rows(n_items: int, n_slots: int, seed: int, strings: bool) -> pd.DataFrame:
    """Items of graded persistence, 1-3 rows per (item, slot) present, at random offsets."""
    rng = np.random.default_rng(seed)
    items, times = [], []
    for i in range(n_items):
        present = np.flatnonzero(rng.random(n_slots) < (i + 1) / n_items)
        for s in present.tolist():
            k = int(rng.integers(1, 4))
            items += [i] * k
            times += (T0 + s * SLOT_US + rng.integers(0, SLOT_US, k)).tolist()
    df = pd.DataFrame({"item": items, "t": np.array(times, dtype=np.int64)})
    df = df.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    if strings:
        df["item"] = "10.0.0." + df["item"].astype(str)
    return df


def to_spark(spark, pdf: pd.DataFrame):
    item_type = "string" if pdf["item"].dtype == object else "long"
    rows = list(zip(pdf["item"].tolist(), pdf["t"].tolist(), strict=True))
    return spark.createDataFrame(rows, f"item {item_type}, us long").selectExpr(
        "item", "timestamp_micros(us) AS t")


def core_run(pdf: pd.DataFrame, alpha, epsilon, window, sliding=True, seed=0,
             delta=DEFAULT_PERSISTENCE_DELTA) -> list[tuple]:
    """The same operator over the same rows, with the API's default instances, in time order."""
    op = PersistentItemsOperator(
        alpha, epsilon, window, SLOT_US, mode="sliding" if sliding else "fixed",
        item_type="string" if pdf["item"].dtype == object else "int64", seed=seed,
        delta=delta)
    rows = pdf.rename(columns={"t": "time"}).sort_values("time", kind="stable")
    out = pd.concat([op.process(rows.reset_index(drop=True)), op.finish()], ignore_index=True)
    return sorted((int(s), i, float(e)) for s, i, e in out.itertuples(index=False))


def spark_rows(result, item="item") -> list[tuple]:
    found, _ = split_rejected(result)
    return sorted((r[0], r[1], r[2]) for r in found.select(
        "window_end_slot", item, "estimate").collect())


@pytest.mark.parametrize(("sliding", "strings"), [(True, True), (False, False)])
def test_batch_equals_core_on_the_same_rows(spark, sliding, strings):
    pdf = make_rows(24, 70, seed=1, strings=strings)
    # tau = 2 / (0.1 * 40) = 0.5: the sketch samples, so equality checks the same hashing
    got = spark_rows(persistent_items(to_spark(spark, pdf), "item", "t", slot="10 seconds",
                                      window_slots=40, alpha=0.5, epsilon=0.1,
                                      sliding=sliding, shards=3, seed=7))
    want = core_run(pdf, 0.5, 0.1, 40, sliding=sliding, seed=7)
    assert got == want
    assert len(want) > (50 if sliding else 10)
    assert len({r[1] for r in want}) < 24  # some items are not reported


def test_exact_sketch_equals_exact_sql_and_reference(spark):
    pdf = make_rows(16, 40, seed=2, strings=True)
    df = to_spark(spark, pdf)
    alpha, epsilon, n = 0.75, 0.25, 8  # epsilon * n = 2: tau = 1, the sketch is exact
    pairs = list(zip(pdf["item"], pdf["t"] // SLOT_US, strict=True))
    first, last = min(p[1] for p in pairs), max(p[1] for p in pairs)
    for sliding in (True, False):
        sketch = persistent_items(df, "item", "t", slot="10 seconds", window_slots=n,
                                  alpha=alpha, epsilon=epsilon, sliding=sliding)
        exact = exact_persistent_items(df, "item", "t", slot="10 seconds", window_slots=n,
                                       alpha=alpha - epsilon, sliding=sliding)
        got_exact = sorted(tuple(r) for r in exact.select(
            "window_end_slot", "item", "persistence").collect())
        # the sketch reports (alpha - epsilon)-persistent items with estimate p + epsilon n / 2
        assert [(s, i, p + epsilon * n / 2) for s, i, p in got_exact] == spark_rows(sketch)
        # and the SQL formulation matches the definition (Definition 2.1), window by window
        ends = (range(first, last + 1) if sliding
                else [k * n + n - 1 for k in range(first // n, last // n + 1)])
        want = sorted((c, d, p) for c in ends
                      for d, p in ref.persistence(pairs, c - n + 1, c).items()
                      if p >= (alpha - epsilon) * n)
        assert got_exact == want
    row = exact.orderBy("window_end_slot").first()
    # event-time bounds: a window spans n slots of 10 s
    assert row.window_end == row.window_start + pd.Timedelta(10 * n, unit="s")


def test_malformed_rows_are_reported_with_their_row(spark):
    df = spark.createDataFrame(
        [("a", 1), ("a", 11), (None, 12), ("b", None), ("a", 25)], "item string, t long")
    out = persistent_items(df, "item", "t", slot=10, window_slots=2, alpha=1.0, epsilon=0.5,
                           time_unit="us")
    found, rejected = split_rejected(out)
    assert sorted(tuple(r) for r in found.select("window_end_slot", "window_end", "item")
                  .collect()) == [(0, 10, "a"), (1, 20, "a"), (2, 30, "a")]
    assert sorted((r.rejected, r.detail) for r in rejected.collect()) == [
        ("malformed", '{"item":"b"}'), ("malformed", '{"t":12}')]
    # the exact baseline accounts for every row as well (issue 16: it dropped them silently)
    exact = exact_persistent_items(df, "item", "t", slot=10, window_slots=2, alpha=1.0,
                                   time_unit="us")
    _, rejected = split_rejected(exact)
    assert sorted((r.rejected, r.detail) for r in rejected.collect()) == [
        ("malformed", '{"item":"b"}'), ("malformed", '{"t":12}')]


def test_integer_times_need_a_unit_and_follow_it_issue16(spark):
    df = spark.createDataFrame([("a", 0), ("a", 90), ("a", 150)], "item string, t long")
    with pytest.raises(ValueError, match="`time_unit` is required"):
        persistent_items(df, "item", "t", slot="1 minute", window_slots=1, alpha=1.0,
                         epsilon=0.5)
    out = exact_persistent_items(df, "item", "t", slot="1 minute", window_slots=1, alpha=1.0,
                                 time_unit="s")
    # epoch seconds: rows in minutes 0, 1 and 2, window bounds back in seconds
    assert sorted(tuple(r) for r in out.select("window_end_slot", "window_start", "window_end")
                  .collect()) == [(0, 0, 60), (1, 60, 120), (2, 120, 180)]


def test_origin_moves_the_slots_issue16(spark):
    days = [("a", f"2024-01-0{d} 12:00:00") for d in range(1, 8)]  # Monday 1 .. Sunday 7
    df = spark.createDataFrame(days, "item string, t string").selectExpr(
        "item", "to_timestamp(t) AS t")
    week = {"slot": "1 week", "window_slots": 1, "alpha": 1.0}
    thursday = exact_persistent_items(df, "item", "t", **week)  # epoch weeks start Thursdays
    monday = exact_persistent_items(df, "item", "t", origin="2024-01-01", **week)
    assert thursday.where("status = 'persistent'").count() == 2
    starts = [r.window_start for r in monday.where("status = 'persistent'").collect()]
    assert [str(s) for s in starts] == ["2024-01-01 00:00:00"]


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"alpha": 0.0}, "alpha"),
    ({"alpha": 1.5}, "alpha"),
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": 0.5}, "epsilon"),  # epsilon >= alpha
    ({"window_slots": 0}, "window_slots"),
    ({"slot": "3 rows"}, "slot"),
    ({"slot": "fortnight"}, "slot"),
    ({"slot": -5}, "slot"),
    ({"delta": 1.0}, "delta"),
    ({"shards": 0}, "shards"),
])
def test_bad_parameters_name_the_parameter(spark, kwargs, name):
    df = spark.createDataFrame([("a", 1)], "item string, t long")
    params = {"slot": "10 seconds", "window_slots": 10, "alpha": 0.5, "epsilon": 0.1, **kwargs}
    with pytest.raises(ValueError, match=f"`{name}`"):
        persistent_items(df, "item", "t", **params)
    if name in ("alpha", "window_slots", "slot"):
        for sketch_only in ("epsilon", "delta", "shards"):
            params.pop(sketch_only, None)
        with pytest.raises(ValueError, match=f"`{name}`"):
            exact_persistent_items(df, "item", "t", **params)


def write_files(directory, chunks: list[pd.DataFrame]) -> None:
    os.makedirs(directory)
    for k, chunk in enumerate(chunks):
        table = pa.table({"item": pa.array(chunk["item"].tolist(), pa.string()),
                          "t": pa.array(chunk["t"].to_numpy(), pa.timestamp("us", tz="UTC"))})
        path = os.path.join(directory, f"part-{k:03d}.parquet")
        pq.write_table(table, path)
        os.utime(path, (1_000_000 + k, 1_000_000 + k))  # the file source reads in mtime order


@pytest.mark.parametrize("quiet", [0, 6 * SPLIT_AT], ids=["one value", "chunks"])
def test_streaming_equals_core_and_reports_late_rows(spark, tmp_path, quiet):
    pdf = make_rows(10, 30, seed=3, strings=True)
    if quiet:  # items seen in two slots: each shard holds more than it keeps in one value
        rng = np.random.default_rng(4)
        slots = rng.integers(0, 30, (quiet, 2))
        pdf = pd.concat([pdf, pd.DataFrame({
            "item": np.repeat([f"q{k}" for k in range(quiet)], 2),
            "t": T0 + slots.ravel() * SLOT_US + rng.integers(0, SLOT_US, 2 * quiet)})],
            ignore_index=True)
    pdf = pdf.sort_values("t", kind="stable").reset_index(drop=True)
    cuts = np.linspace(0, len(pdf), 4).astype(int)
    chunks = [pdf.iloc[lo:hi].sample(frac=1.0, random_state=lo)  # disorder in each batch
              for lo, hi in zip(cuts[:-1], cuts[1:], strict=True)]
    late_row = pd.DataFrame({"item": ["10.0.0.late"], "t": [T0 + 1]})  # far behind
    chunks[1] = pd.concat([chunks[1], late_row], ignore_index=True)
    end = int(pdf["t"].max()) + 1000 * SLOT_US
    sentinel = pd.DataFrame({"item": ["sentinel"], "t": [end]})
    chunks[2] = pd.concat([chunks[2], sentinel], ignore_index=True)  # closes every slot
    write_files(tmp_path / "in", chunks)

    schema = "item string, t timestamp"
    source = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(
        str(tmp_path / "in"))
    out = persistent_items(source, "item", "t", slot="10 seconds", window_slots=12,
                           alpha=0.5, epsilon=0.1, late="30 seconds", shards=2)
    query = (out.writeStream.format("memory").queryName("persistent_stream_test")
             .option("checkpointLocation", str(tmp_path / "ckpt"))
             .outputMode("append").trigger(availableNow=True).start())
    query.awaitTermination()
    result = spark.table("persistent_stream_test")
    end_slot = end // SLOT_US
    got = [r for r in spark_rows(result) if r[0] < end_slot]
    everything = pd.concat([pdf, sentinel], ignore_index=True)  # the late row is set aside
    want = [r for r in core_run(everything, 0.5, 0.1, 12) if r[0] < end_slot]
    assert got == want and len(want) > 20
    late = result.where("rejected = 'late'").collect()
    assert len(late) == 1 and "10.0.0.late" in late[0].detail
    assert result.where("rejected = 'malformed'").count() == 0
    if quiet:
        # the items did go to chunks after the first micro-batch (Spark's state reader sees the
        # MapState's entries); the last one expires every item, and its emptied chunks go
        def chunks(batch: int):
            return (spark.read.format("statestore").option("stateVarName", "wk_chunks")
                    .option("batchId", batch).load(str(tmp_path / "ckpt")))
        assert chunks(0).select("key").distinct().count() == 2
        assert chunks(3).count() == 0


def test_sliding_batch_windows_run_no_spark_job_until_the_users_action_issue35(spark, tmp_path):
    # Every shard's sliding windows run to the input's last slot: that slot was looked up
    # with a Spark job inside persistent_items. Now it comes with the rows (a scalar
    # subquery): the call only builds a plan, and the user's action is the first to read.
    path = str(tmp_path / "in")
    pdf = make_rows(12, 30, seed=3, strings=True)
    pdf.assign(t=pd.to_datetime(pdf["t"], unit="us", utc=True).astype("datetime64[us, UTC]")
               ).to_parquet(path)
    df = spark.read.parquet(path)
    sc = spark.sparkContext
    sc.setJobGroup("wk-lazy-persistent", "must run no job")
    try:
        result = persistent_items(df, "item", "t", slot="10 seconds", window_slots=8,
                                  alpha=0.5, epsilon=0.25, shards=3)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert list(sc.statusTracker().getJobIdsForGroup("wk-lazy-persistent")) == []
    assert spark_rows(result) == core_run(pdf, 0.5, 0.25, 8)


def test_windows_are_those_of_spark_window_with_the_same_persistence(spark):
    """Every window ``exact_persistent_items`` and the (here exact) sketch report is a window
    of ``window(time, window_slots * slot, slot, startTime)`` holding the item in at least
    ``alpha * window_slots`` distinct slots, up to the window ending with the input's last
    slot; rows lie on slot bounds and the origin is not the epoch's (issue #36, point 1)."""
    from pyspark.sql import functions as F

    pdf = make_rows(n_items=12, n_slots=30, seed=8, strings=True)
    on_bound = np.arange(len(pdf)) % 3 == 0  # a third exactly where a slot starts
    pdf["t"] = np.where(on_bound, pdf["t"] - (pdf["t"] - 3_000_000) % SLOT_US, pdf["t"])
    df = to_spark(spark, pdf)
    origin_us = T0 + 3_000_000  # 3 s past the epoch's 10 s slots
    origin = pd.Timestamp(origin_us, unit="us").strftime("%Y-%m-%d %H:%M:%S")
    n, alpha, epsilon = 4, 1.0, 0.5  # epsilon * n = 2: the sketch is exact, threshold 2 slots
    exact = exact_persistent_items(df, "item", "t", slot="10 seconds", window_slots=n,
                                   alpha=alpha - epsilon, origin=origin)
    sketch = persistent_items(df, "item", "t", slot="10 seconds", window_slots=n,
                              alpha=alpha, epsilon=epsilon, origin=origin)
    slot = F.floor((F.unix_micros("t") - F.lit(origin_us)) / F.lit(SLOT_US))
    spark_window = F.window("t", "40 seconds", "10 seconds", "3 seconds")
    want = (df.groupBy("item", spark_window.alias("w"))
            .agg(F.countDistinct(slot).alias("persistence"))
            .where("persistence >= 2")
            .select("item", F.col("w.start").alias("start"), F.col("w.end").alias("end"),
                    "persistence").toPandas())
    last_slot = (int(pdf["t"].max()) - origin_us) // SLOT_US
    last_end = pd.Timestamp(origin_us + (last_slot + 1) * SLOT_US, unit="us")
    want = want[want["end"] <= last_end].sort_values(["item", "start"], ignore_index=True)
    assert len(want) > 20
    for out in (exact, sketch):
        got = (out.where("window_start IS NOT NULL")
               .select("item", F.col("window_start").alias("start"),
                       F.col("window_end").alias("end"), *(
                           ["persistence"] if "persistence" in out.columns else []))
               .toPandas().sort_values(["item", "start"], ignore_index=True))
        assert got[["item", "start", "end"]].values.tolist() == \
            want[["item", "start", "end"]].values.tolist()
    assert got.shape[0] == len(want)
    exact_rows = exact.where("window_start IS NOT NULL").toPandas()
    assert sorted(exact_rows["persistence"]) == sorted(want["persistence"])
