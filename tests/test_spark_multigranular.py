"""Multi-granular windows on Spark (issue #13): batch and streaming equal the core operator."""

from __future__ import annotations

import datetime as dt
import os

import numpy as np
import pandas as pd
import pytest

from windowkit.core.multigranular import MultiGranularAggregator, RecurringItems
from windowkit.datasets.connections import connection_records
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
    rows = pd.DataFrame({"key": df["source"], "time": df["time"], "value": df["duration"]})
    return pd.concat([op.process(rows), op.finish()], ignore_index=True)


def spark_frame(spark, df: pd.DataFrame):
    pdf = df.assign(t=pd.to_datetime(df["time"], unit="us", utc=True))
    return spark.createDataFrame(pdf[["source", "t", "duration", "protocol"]])


def to_core_units(out: pd.DataFrame) -> pd.DataFrame:
    out = out.rename(columns={"source": "key"})
    for c in ("window_start", "window_end"):
        out[c] = pd.to_datetime(out[c], utc=True).astype("datetime64[us, UTC]").astype("int64")
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
    from windowkit.spark import multi_granular, split_reports

    df = records()
    weights = [1.0, 0.5, 0.25]
    sdf = spark_frame(spark, df)
    when = dt.datetime(2023, 11, 14, 22, 13, 21, tzinfo=dt.timezone.utc)
    bad = spark.createDataFrame([("9", None, 1.0, "x"), (None, when, 1.0, "x"),
                                 ("9", when, float("nan"), "x")], sdf.schema)
    out = multi_granular(sdf.unionByName(bad), "t", WINDOW, by="source", value="duration",
                         aggregates=AGGS, regression=True, weights=weights)
    reports, rejected = split_reports(out)
    assert rejected.select("rejected").distinct().collect()[0][0] == "malformed"
    assert rejected.count() == 3
    got = to_core_units(reports.toPandas())
    want = core_reports(df, aggregates=AGGS, regression=True, weights=weights)
    assert_equal_reports(got, want, [*AGGS, "decayed_sum", "decayed_count"])
    # regression: the JVM's moments per granule against the core's per-row ones
    np.testing.assert_allclose(got.sort_values(BOUNDS)["slope"].to_numpy(),
                               want.sort_values(BOUNDS)["slope"].to_numpy(), rtol=1e-6,
                               atol=1e-9)


def test_recurring_items_batch_equals_core(spark):
    from windowkit.spark import recurring_items, split_reports

    df = records(seed=1)
    out, _ = split_reports(recurring_items(spark_frame(spark, df), "t", "protocol", WINDOW,
                                           by="source"))
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
    from windowkit.spark import multi_granular

    df = records(seconds=24, seed=2)
    delay_us = 3_000_000
    arrived = shuffled_within(df, delay_us, seed=3)  # out of order, within the watermark
    source = tmp_path / "in"
    source.mkdir()
    sdf = spark_frame(spark, df)
    stream = spark.readStream.schema(sdf.schema).option("maxFilesPerTrigger", 1).parquet(
        str(source))
    out = multi_granular(stream, "t", WINDOW, by="source", value="duration",
                         aggregates=["count", "sum", "min", "max"], late="3 seconds")
    query = (out.writeStream.format("memory").queryName("mg_stream").outputMode("append")
             .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        for i, part in enumerate(np.array_split(arrived, 4)):
            # Spark wants microseconds; pyarrow would write nanoseconds
            pdf = part.assign(t=pd.to_datetime(part["time"], unit="us", utc=True).astype(
                "datetime64[us, UTC]"))
            pdf[["source", "t", "duration", "protocol"]].to_parquet(
                os.path.join(source, f"part{i}.parquet"), index=False)
            query.processAllAvailable()
        query.processAllAvailable()
        result = spark.sql("select * from mg_stream").toPandas()
    finally:
        query.stop()
    got = result[result["rejected"].isna()]
    assert (result["rejected"].dropna() == "late").all()
    got = to_core_units(got.drop(columns=["rejected", "detail"]))
    want = core_reports(df, aggregates=["count", "sum", "min", "max"])
    # settled reports: those whose instant the final watermark has passed
    watermark = int(df["time"].max()) // 1000 * 1000 - delay_us
    want = want[want["window_end"] - 1 <= watermark]
    assert_equal_reports(got, want, ["count", "sum", "min", "max"])
