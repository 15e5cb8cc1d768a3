"""The generic adapter's own rules: the watermark it may anticipate, where its shards run,
and its parameters."""

from __future__ import annotations

import functools

import pytest
from pyspark.sql import functions as F

from windowkit.core.frames import OUTPUT_SCHEMA, ThresholdFramer
from windowkit.spark.adapter import (
    OperatorJob,
    _own_watermark_delay,
    run_operator,
    spark_hash_int,
    spread_group_ids,
)

pytestmark = pytest.mark.spark


def _rate_stream(spark):
    return spark.readStream.format("rate").option("rowsPerSecond", 1).load()


def test_the_own_watermark_delay_is_known_only_when_it_is_the_only_watermark(spark):
    stream = _rate_stream(spark)
    assert _own_watermark_delay(stream, "10 minutes") == 600_000_000
    assert _own_watermark_delay(stream, None) == 0
    # Spark's global watermark is the minimum over watermarks: another one upstream may hold
    # it back, so nothing can be released ahead of it.
    upstream = stream.withWatermark("timestamp", "1 minute")
    assert _own_watermark_delay(upstream, "10 minutes") is None
    # An interval form only Spark parses: do not guess.
    compound = "1 minute 30 seconds"
    assert _own_watermark_delay(stream, compound) is None


def test_route_must_name_the_key_or_an_input(spark):
    df = spark.createDataFrame([("a", 1, True)], "k string, t long, v boolean")
    job = OperatorJob(factory=functools.partial(ThresholdFramer, "1 rows"),
                      schema=OUTPUT_SCHEMA, inputs={"value": F.col("v").cast("tinyint")})
    with pytest.raises(ValueError, match="`route` must be 'key' or one of the job's inputs"):
        run_operator(df, job, time="t", key="k", route="nope")


def test_spark_hash_int_is_the_hash_spark_partitions_by(spark):
    ends = spark.range(2**31 - 3, 2**31).union(spark.range(-(2**31), -(2**31) + 3))
    values = spark.range(-300, 300).union(ends).select(
        F.col("id"), F.hash(F.col("id").cast("int")).alias("h")).collect()
    assert [spark_hash_int(r.id) for r in values] == [r.h for r in values]


@pytest.mark.parametrize("shards", [1, 2, 3, 4, 8, 16, 64])
def test_each_shard_gets_a_stateful_partition_of_its_own(spark, shards):
    ids = spread_group_ids(shards)
    # Spark's own partition for each grouping value: pmod(hash, partitions)
    rows = spark.createDataFrame([(v,) for v in ids], "g int").select(
        F.pmod(F.hash("g"), F.lit(shards)).alias("p")).collect()
    assert [r.p for r in rows] == list(range(shards))
    # The shard numbers themselves would not do: 0 and 1 share a partition of two.
    assert spark_hash_int(0) % 2 == spark_hash_int(1) % 2
