"""boundary/delta/aggregate/custom frames on Spark equal the core framers: batch, streaming
with out-of-order rows over several micro-batches, restart from a checkpoint; F2 is batch only."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pandas as pd
import pytest

from tests.session_kinds import row_pieces
from windowkit.core.frames import (
    AggregateFramer,
    BoundaryFramer,
    CustomFramer,
    DeltaFramer,
    IncreasingTrend,
)
from windowkit.core.frames.longest import longest_frames
from windowkit.datasets.traffic import traffic_speeds
from windowkit.testing.streams import shuffled_within

pytestmark = pytest.mark.spark

COLUMNS = ["sensor", "frame_id", "start", "end", "last", "n_tuples", "n_missing", "status"]
# (spark function name, its framing arguments, the core framer, options)
CASES = [
    ("boundary_frames", (10.0,), lambda **kw: BoundaryFramer(10.0, **kw),
     {"min_duration": "3 rows", "schedule": "20 seconds", "fragment_every": "10 rows"}),
    ("delta_frames", (8.0,), lambda **kw: DeltaFramer(8.0, **kw),
     {"missing": "satisfying", "extent": "liberal"}),
    ("aggregate_frames", ("mean", "<", 40.0), lambda **kw: AggregateFramer("mean", "<", 40.0, **kw),
     {"min_duration": "2 minutes", "schedule": "20 seconds"}),
    ("aggregate_frames", ("count", ">=", 7), lambda **kw: AggregateFramer("count", ">=", 7, **kw),
     {"missing": "satisfying"}),
    ("custom_frames", (IncreasingTrend(),), lambda **kw: CustomFramer(IncreasingTrend(), **kw),
     {"min_duration": "3 rows"}),
]


@pytest.fixture(scope="module")
def traffic() -> pd.DataFrame:
    return traffic_speeds(n_sensors=4, n_reports=240, seed=2, absent=0.02, null_speed=0.02,
                          start="2010-09-01 07:20")  # the morning rush hour


def micros(ts: pd.Series) -> np.ndarray:
    return ts.astype("datetime64[us, UTC]").astype("int64").to_numpy()


def core_frames(rows: pd.DataFrame, make, finish: bool = True, **opts) -> pd.DataFrame:
    rows = rows.sort_values("time", kind="stable")
    framer = make(**opts)
    out = framer.update(micros(rows["time"]), rows["speed"].to_numpy(),
                        key=rows["sensor"].to_numpy())
    if finish:
        out = pd.concat([out, framer.finish()], ignore_index=True)
    return canonical(out.rename(columns={"key": "sensor"}))


def canonical(df: pd.DataFrame) -> pd.DataFrame:
    df = df[COLUMNS].copy()
    for col in ("start", "end", "last"):
        if not pd.api.types.is_integer_dtype(df[col]):
            ts = pd.to_datetime(df[col], utc=True)
            df[col] = pd.array([None if pd.isna(t) else t.value // 1000 for t in ts],
                               dtype="Int64")
    df = df.astype({"frame_id": "int64", "n_tuples": "int64", "n_missing": "int64",
                    "start": "Int64", "end": "Int64", "last": "Int64", "sensor": object})
    return df.sort_values(["sensor", "frame_id", "status", "last"]).reset_index(drop=True)


def test_batch_frames_of_every_framing_equal_the_core(spark, traffic):
    import windowkit.spark as wk

    df = spark.createDataFrame(traffic)
    for name, args, make, opts in CASES:
        out = getattr(wk, name)(df, "time", "speed", *args, by="sensor", **opts)
        frames, rejected = wk.split_rejected(out)
        assert rejected.count() == 0
        expected = core_frames(traffic, make, **opts)
        assert len(expected) >= 5, name
        pd.testing.assert_frame_equal(canonical(frames.toPandas()), expected, obj=name)


@pytest.mark.parametrize("missing", ["unsatisfied", "satisfying"])
def test_count_frames_see_every_kind_of_missing_value_as_the_core_does(spark, missing):
    """A count framing ships only whether each value is known: null, NaN and ±inf must
    still be missing values, and every finite value a counted one."""
    import windowkit.spark as wk

    kinds = [3.5, None, float("nan"), float("inf"), -float("inf"), 0.0, -2.0, 1e300]
    rng = np.random.default_rng(5)
    rows = pd.DataFrame({
        "sensor": np.repeat(["a", "b"], 60),
        "time": pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(
            np.tile(np.arange(60) * 20, 2), unit="s"),
        "speed": [kinds[i] for i in rng.integers(0, len(kinds), 120)]})
    rows["speed"] = rows["speed"].astype(object).where(rows["speed"].notna(), None)
    df = spark.createDataFrame(rows, "sensor string, time timestamp, speed double")
    out = wk.aggregate_frames(df, "time", "speed", "count", ">=", 3, by="sensor",
                              missing=missing)
    frames, rejected = wk.split_rejected(out)
    assert rejected.count() == 0
    expected = core_frames(rows.assign(speed=rows["speed"].astype(float)),
                           lambda **kw: AggregateFramer("count", ">=", 3, **kw),
                           missing=missing)
    assert expected["n_missing"].sum() > 0 if missing == "satisfying" else len(expected) > 3
    pd.testing.assert_frame_equal(canonical(frames.toPandas()), expected)


def test_bad_rows_are_quarantined_and_missing_values_framed(spark, traffic):
    from windowkit.spark import delta_frames, split_rejected

    bad = traffic.head(2).assign(time=pd.NaT)
    keyless = traffic.head(1).assign(sensor=None)
    df = spark.createDataFrame(pd.concat([traffic, bad, keyless], ignore_index=True))
    frames, rejected = split_rejected(delta_frames(df, "time", "speed", 8.0, by="sensor"))
    assert rejected.toPandas()["rejected"].tolist() == ["malformed"] * 3
    expected = core_frames(traffic, lambda **kw: DeltaFramer(8.0, **kw))
    assert expected["n_missing"].sum() == 0 and traffic["speed"].isna().any()
    pd.testing.assert_frame_equal(canonical(frames.toPandas()), expected)


def test_longest_frame_is_f2_and_refuses_a_stream(spark, traffic, tmp_path):
    from windowkit.spark import delta_frames, longest_frame

    frames = delta_frames(spark.createDataFrame(traffic), "time", "speed", 8.0, by="sensor")
    got = canonical(longest_frame(frames, by="sensor").toPandas())
    core = core_frames(traffic, lambda **kw: DeltaFramer(8.0, **kw))
    expected = canonical(longest_frames(core.rename(columns={"sensor": "key"}))
                         .rename(columns={"key": "sensor"}))
    pd.testing.assert_frame_equal(got, expected)
    traffic.head(5).to_parquet(tmp_path / "p.parquet")
    stream = spark.readStream.schema(spark.read.parquet(str(tmp_path)).schema).parquet(
        str(tmp_path))
    with pytest.raises(ValueError, match="`frames` is a streaming DataFrame"):
        longest_frame(delta_frames(stream, "time", "speed", 8.0, by="sensor"))


def write_arrival_files(traffic: pd.DataFrame, folder, n_files: int) -> pd.DataFrame:
    """Rows in arrival order (up to 2 minutes of disorder) as parquet files, then a far-away
    row per sensor that closes every open frame, then one later row that moves the watermark
    past it. Returns the rows the framers see."""
    os.makedirs(folder, exist_ok=True)
    as_micros = traffic.assign(t=micros(traffic["time"]))
    arrival = shuffled_within(as_micros, 120_000_000, seed=4, time_col="t").drop(columns="t")
    far = traffic["time"].max() + pd.Timedelta(hours=1)
    flush = pd.DataFrame({"sensor": sorted(traffic["sensor"].unique())}).assign(
        time=far, speed=500.0, count=0)
    mover = flush.head(1).assign(time=far + pd.Timedelta(hours=1))
    for i, piece in enumerate([*row_pieces(arrival, n_files), flush, mover]):
        path = os.path.join(folder, f"part-{i:03d}.parquet")
        piece.astype({"time": "datetime64[us, UTC]"}).to_parquet(path, index=False)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    return pd.concat([traffic, flush], ignore_index=True)


def run_stream(spark, source, sink, checkpoint, case) -> None:
    import windowkit.spark as wk

    name, args, _, opts = case
    schema = spark.read.parquet(str(source)).schema
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(source))
    out = getattr(wk, name)(stream, "time", "speed", *args, by="sensor", late="10 minutes",
                            **opts)
    query = (out.writeStream.format("parquet").option("path", str(sink))
             .option("checkpointLocation", str(checkpoint)).outputMode("append").start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def test_streaming_with_out_of_order_rows_equals_the_core(spark, traffic, tmp_path):
    case = CASES[1]  # delta frames, bridged missing values, liberal extent
    fed = write_arrival_files(traffic, tmp_path / "in", n_files=3)
    run_stream(spark, tmp_path / "in", tmp_path / "out", tmp_path / "ck", case)
    got = spark.read.parquet(str(tmp_path / "out")).toPandas()
    assert set(got["status"]) <= {"partial", "final"}
    expected = core_frames(fed, case[2], finish=False, **case[3])
    assert len(expected) >= 8
    pd.testing.assert_frame_equal(canonical(got), expected)


def test_a_query_restarted_on_its_checkpoint_gives_the_same_frames(spark, traffic, tmp_path):
    case = CASES[0]  # boundary frames with fragments on a schedule
    write_arrival_files(traffic, tmp_path / "all", n_files=3)
    files = sorted(os.listdir(tmp_path / "all"))
    os.makedirs(tmp_path / "in")
    for name in files[:2]:
        shutil.copy2(tmp_path / "all" / name, tmp_path / "in" / name)
    run_stream(spark, tmp_path / "in", tmp_path / "out", tmp_path / "ck", case)
    for name in files[2:]:
        shutil.copy2(tmp_path / "all" / name, tmp_path / "in" / name)
    run_stream(spark, tmp_path / "in", tmp_path / "out", tmp_path / "ck", case)
    restarted = canonical(spark.read.parquet(str(tmp_path / "out")).toPandas())
    run_stream(spark, tmp_path / "all", tmp_path / "out2", tmp_path / "ck2", case)
    straight = canonical(spark.read.parquet(str(tmp_path / "out2")).toPandas())
    assert len(straight) >= 8
    pd.testing.assert_frame_equal(restarted, straight)


def test_invalid_parameters_fail_before_spark_runs(spark, traffic):
    import windowkit.spark as wk

    df = spark.createDataFrame(traffic.head(5))
    with pytest.raises(ValueError, match="`x` must be a finite number > 0"):
        wk.boundary_frames(df, "time", "speed", -1.0)
    with pytest.raises(ValueError, match="`op` must be one of"):
        wk.aggregate_frames(df, "time", "speed", "sum", "!=", 1.0)
    with pytest.raises(ValueError, match="`framing` must be a windowkit Framing"):
        wk.custom_frames(df, "time", "speed", object())
    with pytest.raises(ValueError, match="`time_unit` is required for the integer time column"):
        wk.delta_frames(df.withColumn("t", df["count"]), "t", "speed", 1.0)
    # a key named like an output column would give two columns of one name
    with pytest.raises(ValueError, match="`by` must not name a column like one of the output"):
        wk.delta_frames(df.withColumnRenamed("sensor", "start"), "time", "speed", 1.0,
                        by="start")


def test_framings_take_duplicates_where_they_apply(spark, traffic):
    # any/all make sense for truth values only: refused for values before Spark runs; a
    # custom framing of truth values takes them (one report per tie of sensor and time)
    import windowkit.spark as wk
    from windowkit.core.frames import ThresholdFraming

    df = spark.createDataFrame(traffic.head(5))
    with pytest.raises(ValueError, match="`duplicates` must be 'keep' for BoundaryFraming"):
        wk.boundary_frames(df, "time", "speed", 10.0, duplicates="any")
    rows = spark.createDataFrame([("s", 1, 1.0), ("s", 1, 0.0), ("s", 2, 1.0)],
                                 "sensor string, t long, hot double")
    out = wk.custom_frames(rows, "t", "hot", ThresholdFraming(), by="sensor", time_unit="s",
                           duplicates="any")
    assert [tuple(r) for r in out.select("start", "last", "n_tuples").collect()] == [(1, 2, 2)]
