"""The generic adapter's own rules: the watermark it may anticipate, where its shards run,
and its parameters."""

from __future__ import annotations

import functools
import sys

import pandas as pd
import pytest
from pyspark import cloudpickle
from pyspark.sql import functions as F

from windowkit.core.frames import ThresholdFramer
from windowkit.core.operator import StreamOperator
from windowkit.spark.adapter import (
    FLAG_SEPARATOR,
    FLAGGED_CODE,
    PAYLOAD,
    SHARD,
    OperatorJob,
    _arrow_to_frame,
    _own_watermark_delay,
    _pack_rows,
    _take_rejected,
    _unpack_rows,
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


class _Declaring(StreamOperator):
    """An operator that declares a code input, a category input, a route and a derived
    output, and reports what it was given: the dtypes of its inputs, and (deliberately
    wrong) -1 for its derived output, so that a result shows where each value was made."""

    FORMAT_TAG = "TESTDECL"

    def __init__(self, route: str = "item") -> None:
        self._route = route

    @property
    def output_schema(self) -> list[tuple[str, str]]:
        return [("item", "string"), ("time", "timestamp"), ("code", "int64"),
                ("dtypes", "string"), ("twice", "int64")]

    @property
    def input_schema(self) -> list[tuple[str, str]]:
        return [("code", "code"), ("item", "category")]

    @property
    def derived_outputs(self) -> dict[str, str]:
        return {"twice": "2 * code"}

    @property
    def route(self) -> str:
        return self._route

    def process(self, batch: pd.DataFrame) -> pd.DataFrame:
        dtypes = f"{batch['code'].dtype},{batch['item'].dtype}"
        return pd.DataFrame({"item": batch["item"].astype(str), "time": batch["time"],
                             "code": batch["code"].astype("int64"), "dtypes": dtypes,
                             "twice": -1})

    def to_bytes(self) -> bytes:
        return b""

    @classmethod
    def from_bytes(cls, blob: bytes) -> _Declaring:
        return cls()


cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import tests


def _declaring_job(route: str = "item") -> OperatorJob:
    return OperatorJob(factory=functools.partial(_Declaring, route),
                       inputs={"code": F.col("c"), "item": F.col("i")})


def test_the_adapter_acts_on_what_the_operator_declares(spark):
    rows = [(t, t % 3 - 1, f"i{t % 5}") for t in range(40)]
    df = spark.createDataFrame(rows, "t long, c int, i string")
    out = run_operator(df, _declaring_job(), time="t", key=None, shards=3, time_unit="us")
    got = out.toPandas()
    # the code input was folded into the time and given back as int8; the category input
    # arrived as a Categorical
    assert set(got["dtypes"]) == {"int8,category"}
    assert sorted(zip(got["time"], got["code"], got["item"], strict=True)) == rows
    # the derived output was made by Spark from the code, not taken from Python's -1
    assert (got["twice"] == 2 * got["code"]).all()
    # rows are routed by the declared route: each item in one shard, spread over several
    shards = got.groupby("item")["shard"].nunique()
    assert (shards == 1).all() and got["shard"].nunique() > 1
    # a row without a value of the routing column belongs to no shard: malformed
    with_null = df.union(spark.createDataFrame([(99, 0, None)], df.schema))
    rejected = run_operator(with_null, _declaring_job(), time="t", key=None, shards=3,
                            time_unit="us").where("rejected IS NOT NULL").toPandas()
    assert rejected[["rejected", "detail"]].values.tolist() == [["malformed", '{"t":99,"c":0}']]


def test_a_route_must_be_the_key_or_an_input_and_not_the_code(spark):
    df = spark.createDataFrame([(1, 0, "a")], "t long, c int, i string")
    with pytest.raises(ValueError, match="routes by 'nope', which must be 'key' or one of"):
        run_operator(df, _declaring_job("nope"), time="t", key=None, time_unit="us")
    with pytest.raises(ValueError, match="must not route by its code input 'code'"):
        run_operator(df, _declaring_job("code"), time="t", key=None, time_unit="us")


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


@pytest.mark.parametrize("shards", [2, 3, 4])
def test_a_batch_gives_each_explicit_shard_a_task_of_its_own(spark, shards):
    # Explicit shards (DistCM sites) were partitioned by Spark's hash of the shard numbers:
    # with two, shards 0 and 1 met in one task and ran one after the other on one core.
    rows = spark.range(400).select(F.lit("k").alias("k"), F.col("id").alias("t"),
                                   ((F.col("id") / 10).cast("int") % 2 == 0).alias("v"),
                                   (F.col("id") % shards).alias("s"))
    out = run_operator(rows, _frames_job(), time="t", key="k", shards=shards, time_unit="us",
                       shard=F.col("s"))
    tasks = out.select("shard", F.spark_partition_id().alias("task")).distinct().toPandas()
    assert sorted(tasks["shard"]) == list(range(shards))
    assert tasks["task"].nunique() == shards


def _one_frame_per_key(spark, path: str, keys: list, base: int,
                       key_type: str = "string") -> None:
    """Per key: a satisfying row, a breaking one 100 µs later; then a row that moves the
    watermark 10 ms past them all."""
    rows = ([(k, base + i, True) for i, k in enumerate(keys)]
            + [(k, base + 100 + i, False) for i, k in enumerate(keys)]
            + [(keys[0], base + 10_000, False)])
    spark.createDataFrame(rows, f"k {key_type}, t long, v boolean").write.parquet(path)


def _frames_job() -> OperatorJob:
    return OperatorJob(factory=functools.partial(ThresholdFramer, "1 rows"),
                       inputs={"value": F.col("v").cast("tinyint")})


def _final_shards_on_a_stream(spark, path: str, tmp_path, shards: int,
                              key_type: str = "string") -> dict[str, int]:
    stream = run_operator(spark.readStream.schema(f"k {key_type}, t long, v boolean").parquet(
        path), _frames_job(), time="t", key="k", shards=shards, late="0 seconds",
        time_unit="us")
    query = (stream.writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return _final_shards(spark.read.parquet(str(tmp_path / "out")))


def _final_shards(out) -> dict[str, int]:
    """Each key's shard, from its final frames (one shard per key, or the dict says no); the
    key column comes back as ``k``, of its own type."""
    got = out.where("status = 'final'").select(F.col("k").cast("string").alias("key"),
                                               "shard").distinct().toPandas()
    assert not got["key"].duplicated().any()
    return dict(zip(got["key"], got["shard"], strict=True))


@pytest.mark.parametrize("key_type", ["string", "bigint", "int"])
def test_a_key_has_the_same_shard_on_a_stream_as_in_a_batch(spark, tmp_path, key_type):
    # A streaming checkpoint holds each key's state in its shard: the stream packs rows by
    # Spark's hash of the key's text modulo the shards, the partition the batch job's
    # repartition gives. A stream's own text or integer key reaches Python in its own column
    # and becomes text there: the same text, so the same key and shard.
    keys = ([f"k{i}" for i in range(40)] if key_type == "string"
            else [i * 7919 - 100_000 for i in range(40)])
    shards, path = 3, str(tmp_path / "in")
    _one_frame_per_key(spark, path, keys, base=1_700_000_000_000_000, key_type=key_type)
    expected = spark.createDataFrame([(k,) for k in keys], f"key {key_type}").select(
        F.col("key").cast("string").alias("key"),
        F.pmod(F.hash(F.col("key").cast("string")), F.lit(shards)).alias("shard")).toPandas()
    expected = dict(zip(expected["key"], expected["shard"], strict=True))
    assert len(set(expected.values())) == shards
    batch = run_operator(spark.read.parquet(path), _frames_job(), time="t", key="k",
                         shards=shards, time_unit="us")
    assert _final_shards(batch) == expected
    assert _final_shards_on_a_stream(spark, path, tmp_path, shards, key_type) == expected


def test_rows_at_the_start_of_1970_are_settled_once_the_watermark_moves(spark, tmp_path):
    # Their timer falls at 0 ms, where Spark's watermark starts: it fires before anything can
    # be released and must not be lost, or a shard keeps its frames until more rows arrive.
    keys, path = [f"k{i}" for i in range(40)], str(tmp_path / "in")
    _one_frame_per_key(spark, path, keys, base=0)
    assert sorted(_final_shards_on_a_stream(spark, path, tmp_path, shards=3)) == sorted(keys)


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_a_rows_json_from_arrow_is_what_spark_to_json_writes(spark, zone):
    """Late rows are written as JSON in Python from the Arrow columns that reach the stateful
    step; they must read exactly like a malformed row's ``detail`` (Spark's ``to_json``)."""
    import pyarrow as pa

    from windowkit.spark.adapter import spark_json

    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        df = spark.sql("""
            SELECT 'a"b\\\\ é' AS s, timestamp'2024-07-02 03:04:05.123456' AS ts,
                   timestamp'1969-12-31 23:59:59' AS old,
                   timestamp_ntz'2024-01-02 03:04:05.5' AS ntz,
                   date'2024-01-02' AS d, double('NaN') AS nan, double('inf') AS inf,
                   double('-inf') AS ninf, 1.5d AS x, true AS b, CAST(NULL AS INT) AS n,
                   array(1, 2) AS arr, named_struct('u', 1, 'v', CAST(NULL AS STRING)) AS st,
                   3L AS l, X'0102' AS bin, -0.25d AS neg, map('a', 1, 'b', 2) AS m""")
        expected = df.select(F.to_json(F.struct(*df.columns))).first()[0]

        def to_json_in_python(batches):
            for batch in batches:
                yield pa.RecordBatch.from_pydict(
                    {"j": [spark_json(r) for r in batch.to_pylist()]})

        got = df.mapInArrow(to_json_in_python, "j string").first()[0]
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert got == expected


def test_categorical_inputs_reach_the_operator_as_codes_of_their_text():
    """Inputs a job names ``categorical`` arrive as pandas Categoricals holding the same
    values (nulls included); the others as plain columns."""
    import pandas as pd
    import pyarrow as pa

    table = pa.table({"key": ["a", "b", "a"], "time": pa.array([1, 2, 3], pa.int64()),
                      "call": ["dup", None, "dup"], "fd": ["3", "4", None]})
    frame = _arrow_to_frame(table, categorical=("call",))
    assert isinstance(frame["call"].dtype, pd.CategoricalDtype)
    assert isinstance(frame["key"].dtype, pd.CategoricalDtype)
    assert frame["fd"].dtype == object
    assert frame["call"].astype(object).where(frame["call"].notna(), None).tolist() == [
        "dup", None, "dup"]
    assert frame["fd"].tolist() == ["3", "4", None]


def test_packed_rows_come_back_unchanged_from_a_compressed_payload():
    """A stream's rows travel to the stateful step as one zstd-compressed Arrow IPC payload
    per shard: unpacked, each shard gets exactly its rows back."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    n = 20_000
    rng = np.random.default_rng(3)
    shard = rng.integers(0, 2, n).astype(np.int32)
    batch = pa.RecordBatch.from_pydict({
        "key": [f"host-{i % 50}" for i in range(n)],
        "time": pa.array(np.arange(n, dtype=np.int64) * 1_000_000),
        "value": pa.array(rng.normal(size=n)), SHARD: pa.array(shard)})
    packed = list(_pack_rows([7, 9], False, iter([batch])))
    assert len(packed) == 1 and packed[0].column(SHARD).to_pylist() == [7, 9]
    rows = batch.drop_columns([SHARD])
    for index, blob in enumerate(packed[0].column(PAYLOAD).to_pylist()):
        own = rows.filter(pa.array(shard == index))
        plain = pa.BufferOutputStream()
        with pa.ipc.new_stream(plain, own.schema) as writer:
            writer.write_batch(own)
        assert len(blob) < 0.75 * plain.getvalue().size  # keys and times compress
        back = _unpack_rows(iter([pd.DataFrame({PAYLOAD: [blob]})]))
        assert back.equals(pa.Table.from_batches([own]))


def test_coded_text_columns_reach_the_operator_as_the_same_codes_and_rejected_rows(spark):
    """Text columns packed as dictionary codes (each batch with its own dictionary) give the
    operator the same frame, and the same malformed and flagged rows, as packed as text."""
    import pandas as pd
    import pyarrow as pa

    def batch(keys, times, codes):
        shipped = [None if t is None else t * 4 + c for t, c in zip(times, codes, strict=True)]
        return pa.RecordBatch.from_pydict({
            "key": keys, "time": pa.array(shipped, pa.int64()), "call": keys[::-1],
            SHARD: pa.array([0] * len(keys), pa.int32())})

    flagged = f"b{FLAG_SEPARATOR}{{\"host\":\"b\"}}"
    batches = [batch(["a", "b", '{"host":null}'], [1, 2, None], [1, 2, 0]),
               batch(["c", flagged, "a"], [3, 4, 5], [2, FLAGGED_CODE, 1])]

    def through(coded):
        packed = list(_pack_rows([0], False, iter(batches), coded=coded))
        blobs = [blob for p in packed for blob in p.column(PAYLOAD).to_pylist()]
        pieces, rejected = [], []
        for blob in blobs:
            good, bad = _take_rejected(_unpack_rows(iter([pd.DataFrame({PAYLOAD: [blob]})])),
                                       ["call"], "value")
            pieces.append(good)
            rejected.append(bad)
        frame = _arrow_to_frame(pa.concat_tables(pieces), "value", ("call",))
        return frame, pd.concat(rejected, ignore_index=True), pieces

    frame, rejected, pieces = through(("key", "call"))
    assert pa.types.is_dictionary(pieces[0].column("key").type)
    plain_frame, plain_rejected, _ = through(())
    for name in ("key", "call"):
        assert isinstance(frame[name].dtype, pd.CategoricalDtype)
        assert frame[name].astype(object).tolist() == plain_frame[name].astype(object).tolist()
    assert frame[["time", "value"]].equals(plain_frame[["time", "value"]])
    assert frame["key"].astype(object).tolist() == ["a", "b", "c", "b", "a"]
    assert frame["value"].tolist() == [0, 1, 1, -1, 0]
    assert rejected.astype(object).equals(plain_rejected.astype(object))
    assert rejected["detail"].tolist() == ['{"host":null}', '{"host":"b"}']


def test_a_watermark_on_the_streams_own_timestamp_column_is_the_event_times(spark, tmp_path):
    # A stream's own timestamp column travels to the stateful step anyway (for late rows'
    # JSON), so its watermark is defined on it instead of on a copy of the event time. The
    # same time given as an expression takes the copy: both must release the same frames and
    # find the same late row, micro-batch after micro-batch.
    import os

    source = tmp_path / "in"
    source.mkdir()
    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    batches = [[("a", 0, True), ("b", 1, True), ("a", 2, False), ("b", 3, False)],
               [("a", 40, True), ("b", 41, False)],
               [("a", 5, True), ("b", 39, True), ("a", 90, False)]]
    for i, rows in enumerate(batches):
        pd.DataFrame({"k": [k for k, _, _ in rows],
                      "t": [t0 + pd.Timedelta(seconds=s) for _, s, _ in rows],
                      "v": [v for _, _, v in rows]}).astype({"t": "datetime64[us, UTC]"}
                                                            ).to_parquet(source / f"p{i}.parquet")
        os.utime(source / f"p{i}.parquet", (1_700_000_000 + i, 1_700_000_000 + i))  # file order

    def run(time, name):
        stream = spark.readStream.schema("k string, t timestamp, v boolean").option(
            "maxFilesPerTrigger", 1).parquet(str(source))
        out = run_operator(stream, _frames_job(), time=time, key="k", shards=2,
                           late="10 seconds")
        plan = str(out._jdf.queryExecution().analyzed())
        query = out.writeStream.format("memory").queryName(name).start()
        try:
            query.processAllAvailable()
        finally:
            query.stop()
        got = spark.table(name).drop("shard").toPandas()
        return got.sort_values(list(got.columns), ignore_index=True), plan

    own, own_plan = run("t", "own_time_watermark")
    copied, copied_plan = run(F.col("t"), "copied_time_watermark")
    assert "wk_event_time" not in own_plan and "wk_event_time" in copied_plan
    assert (own["rejected"] == "late").sum() == 1
    assert (own["status"] == "final").sum() >= 2
    pd.testing.assert_frame_equal(own, copied)
