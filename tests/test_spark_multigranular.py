"""Multi-granular windows on Spark (issue #13): batch and streaming equal the core operator,
distinct counts agree between batch and streaming, and a restarted query loses nothing."""

from __future__ import annotations

import datetime as dt
import os
import shutil

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import functions as F

from tests.session_kinds import row_pieces
from windowkit.core.multigranular import MultiGranularAggregator, RecurringItems
from windowkit.core.multigranular.distinct import relative_error
from windowkit.datasets.connections import connection_records
from windowkit.reference.multigranular import reference_reports
from windowkit.testing.streams import shuffled_within

pytestmark = pytest.mark.spark

WINDOW = "RANGES 20 SECONDS, 6 SECONDS, 2 SECONDS SLIDES 4 SECONDS, 2 SECONDS, 1 SECOND"
LEVELS = [(2_000_000, 1_000_000), (6_000_000, 2_000_000), (20_000_000, 4_000_000)]
AGGS = ["count", "sum", "mean", "min", "max", "variance", "stddev"]
BOUNDS = ["key", "level", "window_start", "window_end"]


def records(seconds: float = 30, rate: float = 20, seed: int = 0) -> pd.DataFrame:
    df = connection_records(duration=seconds, rate=rate, n_sources=4, bursts=1,
                            recurring_every=(3.0,), start=1_700_000_000_000_000, seed=seed)
    return df.assign(source=df["source"].astype(str))


def core_reports(df: pd.DataFrame, **kwargs) -> pd.DataFrame:
    op = MultiGranularAggregator(levels=LEVELS, **kwargs)
    rows = pd.DataFrame({"key": df["source"], "time": df["time"], "value": df["duration"],
                         "item": df["destination"].astype(str)})
    return pd.concat([op.process(rows), op.finish()], ignore_index=True)


def spark_frame(spark, df: pd.DataFrame):
    pdf = df.assign(t=pd.to_datetime(df["time"], unit="us", utc=True))
    return spark.createDataFrame(pdf[["source", "t", "duration", "protocol", "destination"]])


def write_files(df: pd.DataFrame, folder, n_files: int, first: int = 0) -> None:
    """Write rows as parquet files named (and timed: the file source's order) part000..."""
    os.makedirs(folder, exist_ok=True)
    for i, part in enumerate(row_pieces(df, n_files), start=first):
        # Spark wants microseconds; pyarrow would write nanoseconds
        pdf = part.assign(t=pd.to_datetime(part["time"], unit="us", utc=True).astype(
            "datetime64[us, UTC]"))
        # a hidden name until complete: a running query lists the folder at any time, and a
        # file it saw with today's time would make the older times below look expired
        hidden = os.path.join(folder, f".part{i:03d}.parquet")
        pdf[["source", "t", "duration", "protocol", "destination"]].to_parquet(hidden,
                                                                               index=False)
        os.utime(hidden, (1_700_000_000 + i, 1_700_000_000 + i))
        os.replace(hidden, os.path.join(folder, f"part{i:03d}.parquet"))


def to_core_units(out: pd.DataFrame) -> pd.DataFrame:
    out = out.rename(columns={"source": "key"})
    for c in ("window_start", "window_end"):
        out[c] = pd.to_datetime(out[c], utc=True).astype("datetime64[us, UTC]").astype("int64")
    for c in ("range", "slide"):  # day-time intervals
        if c in out:
            out[c] = out[c] // pd.Timedelta(microseconds=1)
    return out


def assert_equal_reports(got: pd.DataFrame, want: pd.DataFrame, columns: list[str]) -> None:
    got = got.sort_values(BOUNDS).reset_index(drop=True)
    want = want.sort_values(BOUNDS).reset_index(drop=True)
    assert len(got) == len(want) > 0
    assert got[BOUNDS].values.tolist() == want[BOUNDS].values.tolist()
    for c in columns:
        np.testing.assert_allclose(got[c].to_numpy(float), want[c].to_numpy(float), rtol=1e-9,
                                   atol=1e-9, err_msg=c)


def test_batch_equals_core_with_bad_rows_set_aside(spark):
    from windowkit.spark import multi_granular, split_rejected

    df = records()
    weights = [1.0, 0.5, 0.25]
    sdf = spark_frame(spark, df)
    when = dt.datetime(2023, 11, 14, 22, 13, 21, tzinfo=dt.UTC)
    bad = spark.createDataFrame([("9", None, 1.0, "x", 1), (None, when, 1.0, "x", 1),
                                 ("9", when, float("nan"), "x", 1)], sdf.schema)
    out = multi_granular(sdf.unionByName(bad), "t", WINDOW, by="source", value="duration",
                         aggregates=AGGS, regression=True, weights=weights)
    reports, rejected = split_rejected(out)
    assert rejected.select("rejected").distinct().collect()[0][0] == "malformed"
    assert rejected.count() == 3
    got = to_core_units(reports.toPandas())
    want = core_reports(df, aggregates=AGGS, regression=True, weights=weights)
    assert_equal_reports(got, want, [*AGGS, "decayed_sum", "decayed_count"])
    # regression: the JVM's moments per granule against the core's per-row ones
    np.testing.assert_allclose(got.sort_values(BOUNDS)["slope"].to_numpy(),
                               want.sort_values(BOUNDS)["slope"].to_numpy(), rtol=1e-6,
                               atol=1e-9)


def test_plain_aggregates_set_aside_every_bad_row_once(spark):
    """Plain aggregates pre-aggregate fewer moments in the JVM, and bad rows ride through the
    same aggregation: two identical bad rows are two rejected rows, each with its JSON."""
    from windowkit.spark import multi_granular, split_rejected

    df = records(seed=4)
    sdf = spark_frame(spark, df)
    when = dt.datetime(2023, 11, 14, 22, 13, 21, tzinfo=dt.UTC)
    bad = spark.createDataFrame([("9", when, float("nan"), "x", 1),
                                 ("9", when, float("nan"), "x", 1),
                                 ("8", None, 2.0, "y", 2)], sdf.schema)
    plain = ["count", "sum", "mean", "min", "max"]
    out = multi_granular(sdf.unionByName(bad), "t", WINDOW, by="source", value="duration",
                         aggregates=plain)
    reports, rejected = split_rejected(out)
    details = sorted(r["detail"] for r in rejected.collect())
    assert details == sorted([
        '{"source":"8","duration":2.0,"protocol":"y","destination":2}',
        '{"source":"9","t":"2023-11-14T22:13:21.000Z","duration":"NaN","protocol":"x",'
        '"destination":1}',
        '{"source":"9","t":"2023-11-14T22:13:21.000Z","duration":"NaN","protocol":"x",'
        '"destination":1}'])
    assert rejected.filter("rejected = 'malformed'").count() == 3
    assert_equal_reports(to_core_units(reports.toPandas()), core_reports(df, aggregates=plain),
                         plain)


@pytest.mark.parametrize("key_type", ["int", "bigint"])
def test_integer_keys_travel_as_numbers_and_come_back_in_their_type(spark, key_type):
    """An integer key goes to Python and back as a number, a malformed row's JSON beside
    it; the columns the JVM makes after Python (range, slide, window_start, mean) are the
    core's, and with ``mean`` but no ``sum`` the mean comes from Python."""
    from windowkit.spark import multi_granular, split_rejected

    df = records(seed=5)
    sdf = spark_frame(spark, df).withColumn("source", F.col("source").cast(key_type))
    when = dt.datetime(2023, 11, 14, 22, 13, 21, tzinfo=dt.UTC)
    bad = spark.createDataFrame([(None, when, 1.0, "x", 1), (9, when, float("nan"), "x", 1)],
                                sdf.schema)
    for aggregates in (["count", "sum", "mean", "min", "max"], ["count", "mean"]):
        out = multi_granular(sdf.unionByName(bad).repartition(3), "t", WINDOW, by="source",
                             value="duration", aggregates=aggregates)
        assert out.schema["source"].dataType.simpleString() == key_type
        reports, rejected = split_rejected(out)
        assert sorted(r["detail"] for r in rejected.collect()) == [
            '{"source":9,"t":"2023-11-14T22:13:21.000Z","duration":"NaN","protocol":"x",'
            '"destination":1}',
            '{"t":"2023-11-14T22:13:21.000Z","duration":1.0,"protocol":"x","destination":1}']
        got = to_core_units(reports.toPandas()).astype({"key": str})
        want = core_reports(df, aggregates=aggregates)
        assert_equal_reports(got, want, [*aggregates, "range", "slide"])


def test_recurring_items_with_integer_keys_equal_those_with_their_text(spark):
    from windowkit.spark import recurring_items

    sdf = spark_frame(spark, records(seed=6))
    bad = spark.createDataFrame([(None, None, 1.0, "x", 1)], sdf.schema)
    numbered = sdf.unionByName(bad).withColumn("source", F.col("source").cast("int"))
    out = recurring_items(numbered, "t", "protocol", WINDOW, by="source")
    assert out.schema["source"].dataType.simpleString() == "int"
    text = recurring_items(sdf.unionByName(bad), "t", "protocol", WINDOW, by="source")
    rows = sorted(tuple(map(str, r)) for r in out.collect())
    assert rows == sorted(tuple(map(str, r)) for r in text.collect())
    assert sum(r[-2] == "malformed" for r in rows) == 1 and len(rows) > 20


def test_a_batch_reads_its_input_once_with_its_malformed_rows(spark, tmp_path):
    """Malformed rows travel with the others through the one scan of the input (a second
    scan to find them read every file again), for aggregates and recurring items alike."""
    from windowkit.spark import multi_granular, recurring_items, split_rejected

    sdf = spark_frame(spark, records(seed=2))
    bad = spark.createDataFrame([("9", None, 1.0, None, 1)] * 3, sdf.schema)
    sdf.unionByName(bad).write.parquet(str(tmp_path / "in"))
    sdf = spark.read.parquet(str(tmp_path / "in"))
    jobs = [multi_granular(sdf, "t", WINDOW, by="source", value="duration"),
            recurring_items(sdf, "t", "protocol", WINDOW, by="source")]
    for out in jobs:
        plan = out._jdf.queryExecution().executedPlan().toString()
        assert plan.count("Scan parquet") == 1, plan
        _, rejected = split_rejected(out)
        assert rejected.filter("rejected = 'malformed'").count() == 3


def test_recurring_items_batch_equals_core(spark):
    from windowkit.spark import recurring_items, split_rejected

    df = records(seed=1)
    sdf = spark_frame(spark, df)
    bad = spark.createDataFrame([("9", None, 1.0, "x", 1), ("9", None, 1.0, "x", 1),
                                 ("7", dt.datetime(2023, 11, 14, tzinfo=dt.UTC), 1.0, None, 3)],
                                sdf.schema)
    out, rejected = split_rejected(recurring_items(sdf.unionByName(bad), "t", "protocol",
                                                  WINDOW, by="source"))
    assert rejected.filter("rejected = 'malformed'").count() == 3
    got = to_core_units(out.toPandas())
    op = RecurringItems(levels=LEVELS)
    rows = pd.DataFrame({"key": df["source"], "time": df["time"], "item": df["protocol"]})
    want = pd.concat([op.process(rows), op.finish()], ignore_index=True)
    key = [*BOUNDS, "item"]
    got = got.sort_values(key).reset_index(drop=True)
    want = want.sort_values(key).reset_index(drop=True)
    assert len(want) > 0
    assert got[[*key, "count"]].values.tolist() == want[[*key, "count"]].values.tolist()


def test_streaming_with_disorder_equals_core(spark, tmp_path):
    from windowkit.spark import multi_granular, split_rejected

    df = records(seconds=24, seed=2)
    delay_us = 3_000_000
    arrived = shuffled_within(df, delay_us, seed=3)  # out of order, within the watermark
    source = tmp_path / "in"
    source.mkdir()
    sdf = spark_frame(spark, df)
    stream = spark.readStream.schema(sdf.schema).option("maxFilesPerTrigger", 1).parquet(
        str(source))
    # precision 6 (64 registers): the wider scopes' sketches leave their exact list mode, so
    # batch == stream below compares true HLL estimates
    params = {"by": "source", "value": "duration", "aggregates": ["count", "sum", "min", "max"],
              "distinct": "destination", "distinct_precision": 6}
    out = multi_granular(stream, "t", WINDOW, late="3 seconds", **params)
    query = (out.writeStream.format("memory").queryName("mg_stream").outputMode("append")
             .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        for i, part in enumerate(row_pieces(arrived, 4)):
            write_files(part, source, 1, first=i)
            query.processAllAvailable()
        query.processAllAvailable()
        result = spark.sql("select * from mg_stream").toPandas()
    finally:
        query.stop()
    got = result[result["rejected"].isna()]
    assert (result["rejected"].dropna() == "late").all()
    got = to_core_units(got.drop(columns=["rejected", "detail"]))
    want = core_reports(df, aggregates=["count", "sum", "min", "max"], distinct=True,
                        distinct_precision=6)
    # settled reports: those whose instant the final watermark has passed
    watermark = int(df["time"].max()) // 1000 * 1000 - delay_us
    want = want[want["window_end"] - 1 <= watermark].rename(
        columns={"distinct": "distinct_destination"})
    assert_equal_reports(got, want, ["count", "sum", "min", "max", "distinct_destination"])
    # the batch job sketches granules in the JVM, the stream in Python: the same estimates
    batch = to_core_units(split_rejected(multi_granular(sdf, "t", WINDOW, **params))[0]
                          .toPandas())
    batch = batch.merge(got[BOUNDS], on=BOUNDS)
    assert_equal_reports(batch, got, ["count", "distinct_destination"])
    exact = reference_reports(df.rename(columns={"source": "key", "destination": "item"})
                              .assign(value=1.0), LEVELS)
    exact = exact.merge(got[BOUNDS], on=BOUNDS).sort_values(BOUNDS)
    estimates = got.sort_values(BOUNDS)["distinct_destination"].to_numpy()
    assert (estimates != exact["distinct"].to_numpy()).any()  # HLL mode was reached


def test_batch_distinct_counts_are_exact_when_small_and_within_four_errors(spark):
    from windowkit.spark import multi_granular, split_rejected

    rng = np.random.default_rng(7)
    n = 30_000
    # source "scan" touches a fresh destination almost every row, "web" a few dozen
    source = np.where(rng.random(n) < 0.7, "scan", "web")
    df = pd.DataFrame({"time": np.sort(rng.integers(0, 40_000_000, n)) + 1_700_000_000_000_000,
                       "source": source, "duration": 1.0, "protocol": "tcp",
                       "destination": np.where(source == "scan", rng.integers(0, 10**9, n),
                                               rng.integers(0, 30, n))})
    out, _ = split_rejected(multi_granular(spark_frame(spark, df), "t", WINDOW, by="source",
                                          aggregates=["count"], distinct="destination"))
    got = to_core_units(out.toPandas()).sort_values(BOUNDS).reset_index(drop=True)
    exact = reference_reports(df.rename(columns={"source": "key", "destination": "item"})
                              .assign(value=1.0), LEVELS).sort_values(BOUNDS)
    assert got[BOUNDS].values.tolist() == exact[BOUNDS].values.tolist()
    estimate = got["distinct_destination"].to_numpy(float)
    truth = exact["distinct"].to_numpy(float)
    small = truth <= 100  # DataSketches' list/set modes: the items' hashes, no estimate
    assert small.any() and (~small).any() and truth.max() > 10_000
    assert (estimate[small] == truth[small]).all()
    assert (np.abs(estimate - truth) <= 4 * relative_error(12) * truth).all()
    want = core_reports(df, aggregates=["count"], distinct=True)
    assert_equal_reports(got.rename(columns={"distinct_destination": "distinct"}), want,
                         ["count", "distinct"])


def run_files(spark, source, sink, checkpoint, recurring: bool = False) -> None:
    """One run of a file-source query over what ``source`` holds now, to ``sink``
    (multi-granular aggregates, or with ``recurring`` the recurring protocols per source)."""
    from windowkit.spark import multi_granular, recurring_items

    schema = spark.read.parquet(str(source)).schema
    # two files per micro-batch: the runs below are then one, one and two micro-batches
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 2).parquet(
        str(source))
    if recurring:
        out = recurring_items(stream, "t", "protocol", WINDOW, by="source", late="3 seconds")
    else:
        out = multi_granular(stream, "t", WINDOW, by="source", value="duration",
                             aggregates=["count", "sum", "max"], distinct="destination",
                             late="3 seconds")
    query = (out.writeStream.format("parquet").option("path", str(sink))
             .option("checkpointLocation", str(checkpoint)).outputMode("append")
             .trigger(availableNow=True).start())
    query.awaitTermination()


def restarted_and_straight(spark, tmp_path, arrived: pd.DataFrame, recurring: bool = False):
    """The rows of a query run over half the files, then restarted from its checkpoint when
    the rest arrive, and those of one run over all of them; and the first run's row count."""
    write_files(arrived, tmp_path / "all", 4)
    files = sorted(os.listdir(tmp_path / "all"))
    os.makedirs(tmp_path / "in")
    for name in files[:2]:  # the first run sees only part of the input, then stops
        shutil.copy2(tmp_path / "all" / name, tmp_path / "in" / name)
    run_files(spark, tmp_path / "in", tmp_path / "out", tmp_path / "ck", recurring)
    first = len(spark.read.parquet(str(tmp_path / "out")).toPandas())
    for name in files[2:]:  # more files arrive; the query restarts from its checkpoint
        shutil.copy2(tmp_path / "all" / name, tmp_path / "in" / name)
    run_files(spark, tmp_path / "in", tmp_path / "out", tmp_path / "ck", recurring)
    restarted = spark.read.parquet(str(tmp_path / "out")).toPandas()
    run_files(spark, tmp_path / "all", tmp_path / "out2", tmp_path / "ck2", recurring)
    straight = spark.read.parquet(str(tmp_path / "out2")).toPandas()
    return first, restarted, straight


def test_a_query_restarted_on_its_checkpoint_gives_the_rows_of_one_that_ran_through(
        spark, tmp_path):
    df = records(seconds=24, seed=4)
    arrived = shuffled_within(df, 3_000_000, seed=5)
    first, restarted, straight = restarted_and_straight(spark, tmp_path, arrived)
    assert 0 < first < len(restarted)
    columns = [*BOUNDS, "count", "sum", "max", "distinct_destination", "rejected"]
    restarted = to_core_units(restarted)[columns].sort_values(BOUNDS).reset_index(drop=True)
    straight = to_core_units(straight)[columns].sort_values(BOUNDS).reset_index(drop=True)
    pd.testing.assert_frame_equal(restarted, straight)
    # and they are the core's reports (all settled ones up to the last file's watermark)
    want = core_reports(df, aggregates=["count", "sum", "max"], distinct=True).rename(
        columns={"distinct": "distinct_destination"})
    got = straight[straight["rejected"].isna()]
    assert (straight["rejected"].dropna() == "late").all()
    want = want.merge(got[BOUNDS], on=BOUNDS)
    assert_equal_reports(got, want, ["count", "sum", "max", "distinct_destination"])
    # the watermark in force in the last micro-batch: the first two files' latest time less
    # the delay; every report at or before it must be out
    before_last = row_pieces(arrived, 4)[:2]
    watermark = int(pd.concat(before_last)["time"].max()) // 1000 * 1000 - 3_000_000
    due = core_reports(df)
    due = due[due["window_end"] - 1 <= watermark]
    assert len(due) > 20
    assert set(map(tuple, due[BOUNDS].values.tolist())) <= set(
        map(tuple, got[BOUNDS].values.tolist()))


def test_recurring_items_restarted_on_its_checkpoint_give_the_rows_of_a_run_through(
        spark, tmp_path):
    df = records(seconds=24, seed=6)
    arrived = shuffled_within(df, 3_000_000, seed=7)
    first, restarted, straight = restarted_and_straight(spark, tmp_path, arrived,
                                                        recurring=True)
    assert 0 < first < len(restarted)
    columns = [*BOUNDS, "item", "count", "rejected"]
    restarted = to_core_units(restarted)[columns].sort_values(columns[:-1]).reset_index(
        drop=True)
    straight = to_core_units(straight)[columns].sort_values(columns[:-1]).reset_index(drop=True)
    pd.testing.assert_frame_equal(restarted, straight)
    # every reported item recurs: it is the core's, for the windows settled in the stream
    op = RecurringItems(levels=LEVELS)
    rows = pd.DataFrame({"key": df["source"], "time": df["time"], "item": df["protocol"]})
    want = pd.concat([op.process(rows), op.finish()], ignore_index=True)
    got = straight[straight["rejected"].isna()]
    assert len(got) > 0
    key = [*BOUNDS, "item", "count"]
    assert set(map(tuple, got[key].values.tolist())) <= set(map(tuple, want[key].values.tolist()))


def test_streaming_bad_and_late_rows_come_out_as_the_users_rows(spark, tmp_path):
    """On a stream the value column travels as it is: a row whose value is NaN is still
    malformed, and a late row's ``detail`` is still Spark's ``to_json`` of the whole row."""
    from pyspark.sql import functions as F

    from windowkit.spark import multi_granular, split_rejected

    source = tmp_path / "in"
    source.mkdir()
    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    files = [[("a", t0, 1.0, "tcp", 5)],
             [("a", t0 + pd.Timedelta(seconds=2), float("nan"), "udp", 6),
              ("a", t0 + pd.Timedelta(minutes=5), 2.0, "tcp", 7)],
             [("a", t0 + pd.Timedelta(seconds=30), 2.5, "icmp", 8)]]  # behind the watermark
    names = ["source", "t", "duration", "protocol", "destination"]
    for i, rows in enumerate(files):
        part = pd.DataFrame(rows, columns=names).astype({"t": "datetime64[us, UTC]"})
        part.to_parquet(source / f"p{i}.parquet", index=False)
        os.utime(source / f"p{i}.parquet", (1_700_000_000 + i, 1_700_000_000 + i))
    schema = spark.read.parquet(str(source)).schema
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(
        str(source))
    out = multi_granular(stream, "t", WINDOW, by="source", value="duration",
                         aggregates=["count", "sum"], late="10 seconds")
    query = out.writeStream.format("memory").queryName("mg_bad_and_late").start()
    query.processAllAvailable()
    query.stop()
    _, rejected = split_rejected(spark.table("mg_bad_and_late"))
    every = spark.read.parquet(str(source))
    as_json = {r["protocol"]: r["j"] for r in every.select(
        "protocol", F.to_json(F.struct(*every.columns)).alias("j")).collect()}
    got = sorted((r["rejected"], r["detail"]) for r in rejected.collect())
    assert got == [("late", as_json["icmp"]), ("malformed", as_json["udp"])]
    assert '"duration":2.5' in as_json["icmp"]


def boundary_readings(spark):
    """Glucose-like readings of two patients every 5 minutes on whole minutes (so on window
    bounds), plus readings at odd instants (one a microsecond before a bound), over a day."""
    rng = np.random.default_rng(21)
    t0 = dt.datetime(2024, 3, 1)
    rows = [(p, t0 + dt.timedelta(minutes=5 * i), float(rng.normal(110, 20)))
            for p in ("p1", "p2") for i in range(288) if rng.random() > 0.1]
    odd = sorted(rng.integers(0, 86_400_000_000, 200).tolist())
    rows += [(str(rng.choice(["p1", "p2"])), t0 + dt.timedelta(microseconds=u),
              float(rng.normal(110, 20))) for u in odd]
    rows += [("p1", t0 + dt.timedelta(minutes=17, microseconds=-1), 90.0),
             ("p2", t0 + dt.timedelta(minutes=32), 95.0)]
    return spark.createDataFrame(rows, "patient string, time timestamp, glucose double")


def test_every_level_has_the_windows_and_aggregates_of_spark_window(spark):
    """By default each level's reports are the rows of ``window(time, range, slide,
    startTime)`` grouped with the key, window for window, on rows lying on window bounds and
    with a non-zero origin (issue #36, point 1)."""
    from windowkit.spark import multi_granular, split_rejected

    df = boundary_readings(spark)
    levels = [("5 minutes", "5 minutes"), ("15 minutes", "5 minutes"), ("1 hour", "15 minutes")]
    origin = 2 * 60_000_000  # windows start 2 minutes past whole slides, like startTime
    aggs = ["count", "sum", "min", "max", "mean"]
    reports, rejected = split_rejected(multi_granular(df, "time", levels=levels, by="patient",
                                                      value="glucose", aggregates=aggs,
                                                      origin=origin))
    assert rejected.count() == 0
    got = reports.toPandas()
    for k, (rng, slide) in enumerate(levels):
        spark_window = F.window("time", rng, slide, "2 minutes")
        want = (df.groupBy("patient", spark_window.alias("w"))
                .agg(F.count("*").alias("count"), F.sum("glucose").alias("sum"),
                     F.min("glucose").alias("min"), F.max("glucose").alias("max"),
                     F.avg("glucose").alias("mean"))
                .select("patient", "w.start", "w.end", *aggs).toPandas())
        mine = got[got.level == k]
        assert set(mine["range"]) == {pd.Timedelta(rng)}
        assert set(mine["slide"]) == {pd.Timedelta(slide)}
        mine = mine.rename(columns={"window_start": "start", "window_end": "end"})
        order = ["patient", "start", "end"]
        mine = mine[[*order, *aggs]].sort_values(order, ignore_index=True)
        want = want[[*order, *aggs]].sort_values(order, ignore_index=True)
        assert len(mine) == len(want) > 100
        assert mine[order].values.tolist() == want[order].values.tolist(), f"level {k}"
        assert mine["count"].tolist() == want["count"].tolist(), f"level {k}"
        for c in ("sum", "min", "max", "mean"):
            np.testing.assert_allclose(mine[c], want[c], rtol=1e-12, err_msg=f"level {k} {c}")


def test_closed_right_keeps_the_papers_scopes_and_the_readme_timeline_holds(spark):
    """The README's timeline (rows at 00:00, 00:05, 00:07; 10-minute windows every 5 minutes)
    by default; ``closed="right"``: the report at ``tc`` covers ``(tc - range, tc]``, so a
    row on a slide instant ends a window rather than starting one."""
    from windowkit.spark import multi_granular

    t0 = dt.datetime(2024, 1, 1)
    df = spark.createDataFrame([("a", t0 + dt.timedelta(minutes=m)) for m in (0, 5, 7)],
                               "k string, t timestamp")

    def windows(closed):
        out = multi_granular(df, "t", levels=[("10 minutes", "5 minutes")], by="k",
                             aggregates=["count"], closed=closed)
        return sorted((r.window_start - t0, r.window_end - r.window_start, r["count"])
                      for r in out.collect())

    minutes, us, ten = dt.timedelta(minutes=1), dt.timedelta(microseconds=1), \
        dt.timedelta(minutes=10)
    assert windows("left") == [(-5 * minutes, ten, 1), (0 * minutes, ten, 3),
                               (5 * minutes, ten, 2)]
    assert windows("right") == [(-10 * minutes + us, ten, 1), (-5 * minutes + us, ten, 2),
                                (us, ten, 2), (5 * minutes + us, ten, 1)]
