"""Keys as ``pyspark.sql.functions`` takes them (issue #36, point 2): every keyed function takes
``by`` as a column name, a ``Column`` or a list of them (a composite key), on batch and stream.

The oracle of a composite key is the same function on a single text key that encodes the pair
(``concat_ws``), split back: the composite key must give exactly those rows, with each key
column under its own name and type. A ``Column`` key must give the rows of its name."""

from __future__ import annotations

import datetime as dt
import os
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from windowkit.core.frames import IncreasingTrend
from windowkit.spark import (
    aggregate_frames,
    boundary_frames,
    custom_frames,
    delta_frames,
    longest_frame,
    multi_granular,
    recurring_items,
    threshold_frames,
    widen_detect,
)

pytestmark = pytest.mark.spark

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
SCHEMA = "site string, router int, time timestamp, temp double, proto string"
WINDOW = "RANGES 1 MINUTE, 20 SECONDS SLIDES 20 SECONDS, 10 SECONDS"

#: Each keyed function, called with the key ``by`` on the readings.
CALLS = {
    "threshold_frames": lambda df, by: threshold_frames(df, "time", "temp > 31", by=by,
                                                        min_duration="2 rows"),
    "boundary_frames": lambda df, by: boundary_frames(df, "time", "temp", 2.0, by=by),
    "delta_frames": lambda df, by: delta_frames(df, "time", "temp", 3.0, by=by),
    "aggregate_frames": lambda df, by: aggregate_frames(df, "time", "temp", "sum", ">", 100.0,
                                                        by=by),
    "custom_frames": lambda df, by: custom_frames(df, "time", "temp", IncreasingTrend(), by=by,
                                                  min_duration="3 rows"),
    "multi_granular": lambda df, by: multi_granular(df, "time", WINDOW, by=by, value="temp",
                                                    aggregates=["count", "sum", "max"]),
    "recurring_items": lambda df, by: recurring_items(df, "time", "proto", WINDOW, by=by),
    "widen_detect": lambda df, by: widen_detect(df.withColumnRenamed("proto", "call"), "time",
                                                by=by, detector="a; b; a", base="10 seconds",
                                                max_length=4, levels=3, late="1 minute"),
}


def readings(n: int = 180) -> pd.DataFrame:
    """Two sites of three routers each (router numbers shared between sites: only the pair
    is a key), a reading every 5 s per router, and rows with a null in one key column."""
    rng = np.random.default_rng(3)
    rows = [(f"s{i % 2}", (i // 2) % 3, T0 + dt.timedelta(seconds=5 * (i // 6)),
             float(rng.integers(28, 36)), str(rng.choice(["a", "b", "c"])))
            for i in range(n)]
    rows += [(None, 1, T0 + dt.timedelta(seconds=7), 40.0, "a"),
             ("s1", None, T0 + dt.timedelta(seconds=8), 40.0, "b")]
    return pd.DataFrame(rows, columns=["site", "router", "time", "temp", "proto"])


@pytest.fixture(scope="module")
def df(spark):
    return spark.createDataFrame(readings(), SCHEMA)


def _rows(out) -> pd.DataFrame:
    """All rows in a canonical order (intervals as their text: pandas compares them)."""
    pdf = out.toPandas() if not isinstance(out, pd.DataFrame) else out
    pdf = pdf.drop(columns=[c for c in ("shard",) if c in pdf.columns])
    pdf = pdf.astype({c: str for c in ("range", "slide") if c in pdf.columns})
    return pdf.sort_values(list(pdf.columns), na_position="first",
                           key=lambda s: s.astype(str)).reset_index(drop=True)


def _split_pair(single: pd.DataFrame) -> pd.DataFrame:
    """The rows of the ``pair`` key (``site|router``) with the pair split back into
    ``site`` (text) and ``router`` (int); a rejected row's pair is null."""
    pair = single.pop("pair").str.split("|", expand=True, regex=False)
    single.insert(0, "router", pd.to_numeric(pair[1]).astype("Int32"))
    single.insert(0, "site", pair[0])
    return single


def _pair(df):
    return df.withColumn("pair", F.when(F.col("site").isNotNull() & F.col("router").isNotNull(),
                                        F.concat_ws("|", "site", F.col("router").cast("string"))))


def _same(composite: pd.DataFrame, single: pd.DataFrame) -> None:
    composite = composite.astype({"router": "Int32"})
    # a rejected row's JSON holds the pair column of the oracle's input
    single["detail"] = single["detail"].str.replace(r',"pair":"[^"]*"', "", regex=True)
    pd.testing.assert_frame_equal(_rows(composite), _rows(single), check_dtype=False)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_composite_key_gives_the_rows_of_one_key_encoding_the_pair_issue36(spark, df, name):
    call = CALLS[name]
    out = call(df, ["site", "router"])
    assert out.columns[:2] == ["site", "router"]
    assert [f.dataType.simpleString() for f in out.schema.fields[:2]] == ["string", "int"]
    composite = out.toPandas()
    single = _split_pair(call(_pair(df), "pair").toPandas())
    assert len(composite[composite["rejected"].isna()]) > 0
    # the rows with a null in one key column are malformed, with their JSON
    malformed = composite[composite["rejected"] == "malformed"]["detail"]
    assert malformed.str.contains('"temp":40.0').sum() == 2
    _same(composite, single)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_column_key_gives_the_rows_of_its_name_issue36(spark, df, name):
    call = CALLS[name]
    by_name = call(df, "site").toPandas()
    assert not by_name[by_name["rejected"].isna()].empty
    pd.testing.assert_frame_equal(_rows(call(df, F.col("site"))), _rows(by_name))


@pytest.mark.parametrize("name", ["threshold_frames", "multi_granular", "widen_detect"])
def test_a_computed_column_key_is_named_and_typed_as_spark_names_it_issue36(spark, df, name):
    call = CALLS[name]
    out = call(df, F.upper("site"))
    assert out.columns[0] == "upper(site)"
    lowered = call(df.withColumn("site", F.upper("site")), "site").toPandas()
    lowered = lowered.rename(columns={"site": "upper(site)"})
    got = out.toPandas()
    got["detail"] = got["detail"].str.upper()
    lowered["detail"] = lowered["detail"].str.upper()
    pd.testing.assert_frame_equal(_rows(got), _rows(lowered))


def test_every_groupable_type_comes_back_as_it_was_in_a_composite_key_issue36(spark):
    """Timestamps to the microsecond (whatever the session's zone), dates, doubles, decimals,
    booleans, binary, timestamp_ntz: each key column back with its value and type."""
    values = spark.sql("""SELECT * FROM VALUES
        (TIMESTAMP'2024-01-01 00:00:00.123456', DATE'2024-02-29', 0.1D, 1e-300D,
         CAST('12345678901234.5678' AS DECIMAL(20, 4)), true, X'00FF10',
         TIMESTAMP_NTZ'2024-03-01 12:00:00.000001', 'a"b,c', CAST(-3 AS TINYINT)),
        (TIMESTAMP'1969-12-31 23:59:59.999999', DATE'1900-01-01', -0.0D, 3.5D,
         CAST('-1.0001' AS DECIMAL(20, 4)), false, X'', TIMESTAMP_NTZ'1999-12-31 23:59:59',
         '', CAST(127 AS TINYINT))
        AS v(ts, d, x, y, dec, b, bin, ntz, s, tiny)""")
    keys = values.columns
    rows = values.crossJoin(spark.range(3).select(
        F.timestamp_seconds(F.col("id") * 10).alias("time")))
    zone = spark.conf.get("spark.sql.session.timeZone")
    try:
        spark.conf.set("spark.sql.session.timeZone", "America/St_Johns")
        out = multi_granular(rows, "time", "RANGES 10 SECONDS SLIDES 10 SECONDS",
                             by=keys, aggregates=["count"])
        out = out.filter("level = 0").select(*keys).distinct()
        assert [(f.name, f.dataType) for f in out.schema] == [
            (f.name, f.dataType) for f in values.schema]
        assert sorted(out.collect()) == sorted(values.collect())
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def test_longest_frame_takes_a_composite_key_issue36(spark, df):
    frames = threshold_frames(df, "time", "temp > 31", by=["site", "router"])
    longest = _rows(longest_frame(frames, by=["site", "router"]))
    final = frames.filter("status = 'final'").toPandas()
    final["length"] = final["last"] - final["start"]
    best = final.groupby(["site", "router"])["length"].transform("max")
    expected = final[final["length"] == best].drop(columns="length")
    pd.testing.assert_frame_equal(longest, _rows(expected), check_dtype=False)
    assert longest.groupby(["site", "router"]).ngroups == 6


def test_a_key_named_like_an_output_column_is_refused_in_one_line_issue36(spark, df):
    renamed = df.withColumnRenamed("site", "level")
    with pytest.raises(ValueError, match=r"^`by` must not name a column like one of the "
                       r"output's .*got 'level' \(rename it first") as error:
        multi_granular(renamed, "time", WINDOW, by=["level", "router"], aggregates=["count"])
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("by", [3, [], [None], {"site"}])
def test_a_key_of_another_kind_is_refused_naming_by_issue36(spark, df, by):
    with pytest.raises(ValueError, match=r"^`by` must be a column name, a Column or a list"):
        threshold_frames(df, "time", "temp > 31", by=by)


#: A typo in each column parameter of each family (Spark's own error, whose "did you mean"
#: must list only the caller's columns).
TYPOS = {
    "threshold by": lambda df: threshold_frames(df, "time", "temp > 31", by="sitee"),
    "threshold time": lambda df: threshold_frames(df, "tiem", "temp > 31", by="site"),
    "threshold composite by": lambda df: threshold_frames(df, "time", "temp > 31",
                                                          by=["site", "rooter"]),
    "delta value": lambda df: delta_frames(df, "time", "tmp", 3.0, by="site"),
    "delta by": lambda df: delta_frames(df, "time", "temp", 3.0, by=F.col("sitee")),
    "multi_granular by": lambda df: multi_granular(df, "time", WINDOW, by="sitee",
                                                   aggregates=["count"]),
    "multi_granular value": lambda df: multi_granular(df, "time", WINDOW, by="site",
                                                      value="tmp"),
    "multi_granular time": lambda df: multi_granular(df, "tiem", WINDOW, by="site",
                                                     aggregates=["count"]),
    "recurring item": lambda df: recurring_items(df, "time", "prto", WINDOW, by="site"),
    "widen by": lambda df: widen_detect(df, "time", by="sitee", detector="a; b", levels=2),
    "widen time": lambda df: widen_detect(df, "tiem", by="site", detector="a; b", levels=2),
}


@pytest.mark.parametrize("name", sorted(TYPOS))
def test_a_typo_suggests_only_the_callers_columns_issue36(spark, df, name):
    with pytest.raises(Exception, match="UNRESOLVED_COLUMN") as error:
        TYPOS[name](df).collect()
    suggested = re.search(r"Did you mean one of the following\? \[([^\]]*)\]", str(error.value))
    assert suggested is not None
    assert set(re.findall(r"`([^`]+)`", suggested.group(1))) <= {*df.columns}


# ------------------------------------------------------------------------------- streams
def _stream(spark, rows: pd.DataFrame, folder: str, parts: int = 4):
    """``rows`` in time order as ``parts`` Parquet files, read one per micro-batch."""
    os.makedirs(folder)
    table = pa.Table.from_pandas(
        rows.sort_values("time", kind="stable").astype({"time": "datetime64[us, UTC]",
                                                         "router": "Int32"}),
        preserve_index=False)
    for i in range(parts):
        start, end = i * len(table) // parts, (i + 1) * len(table) // parts
        path = f"{folder}/part-{i}.parquet"
        pq.write_table(table.slice(start, end - start), path)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(folder)


def _run(result, folder: str) -> pd.DataFrame:
    query = (result.writeStream.format("parquet").option("path", f"{folder}/out")
             .option("checkpointLocation", f"{folder}/ck").outputMode("append").start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return result.sparkSession.read.parquet(f"{folder}/out").toPandas()


@pytest.mark.parametrize("name", ["threshold_frames", "multi_granular", "widen_detect"])
def test_a_composite_key_on_a_stream_gives_the_rows_of_one_key_encoding_the_pair_issue36(
        spark, tmp_path, name):
    call = CALLS[name]
    rows = readings()
    # a far-off row of each key and one later still: every window and frame settles
    far = rows["time"].max() + pd.Timedelta(hours=1)
    ends = rows.dropna().drop_duplicates(["site", "router"]).assign(time=far, temp=30.0)
    rows = pd.concat([rows, ends, ends.head(1).assign(time=far + pd.Timedelta(hours=1))])
    composite = _run(call(_stream(spark, rows, str(tmp_path / "a")), ["site", "router"]),
                     str(tmp_path / "a"))
    single_in = _pair(_stream(spark, rows, str(tmp_path / "b")))
    single = _split_pair(_run(call(single_in, "pair"), str(tmp_path / "b")))
    assert len(composite[composite["rejected"].isna()]) > 0
    assert list(composite.columns[:2]) == ["site", "router"]
    _same(composite, single)
