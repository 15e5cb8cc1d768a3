"""threshold_frames on Spark equals the core framer: batch, streaming, restart, bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import functions as F

from tests.session_kinds import row_pieces
from windowkit.core.frames import ThresholdFramer, predicate_codes
from windowkit.datasets.routers import router_readings

pytestmark = pytest.mark.spark

PARAMS = {"min_duration": "3 rows", "schedule": "30 seconds", "missing": "satisfying",
          "fragment_every": "10 rows"}
FRAME_COLUMNS = ["router", "frame_id", "start", "end", "last", "n_tuples", "n_missing", "status"]


def core_frames(readings: pd.DataFrame, finish: bool = True, **params) -> pd.DataFrame:
    """The core framer on the rows in event-time order, as the Spark output's columns; a null
    loss rate is a missing value, as ``loss_rate > 0.003`` is null in Spark."""
    rows = readings.sort_values("time", kind="stable")
    framer = ThresholdFramer(**params)
    loss = rows["loss_rate"]
    codes = predicate_codes((loss > 0.003).where(loss.notna()))
    out = framer.update(_micros(rows["time"]), codes, key=rows["router"].to_numpy())
    if finish:
        out = pd.concat([out, framer.finish()], ignore_index=True)
    return canonical(out.rename(columns={"key": "router"}))


def canonical(df: pd.DataFrame) -> pd.DataFrame:
    df = df[FRAME_COLUMNS].copy()
    for col in ("start", "end", "last"):
        if not pd.api.types.is_integer_dtype(df[col]):
            df[col] = pd.array(_micros_nullable(df[col]), dtype="Int64")
    df = df.astype({"frame_id": "int64", "n_tuples": "int64", "n_missing": "int64",
                    "start": "Int64", "end": "Int64", "last": "Int64", "router": object})
    return df.sort_values(["router", "frame_id", "status", "last"]).reset_index(drop=True)


def _micros(ts: pd.Series) -> np.ndarray:
    return ts.dt.tz_convert("UTC").astype("datetime64[us, UTC]").astype("int64").to_numpy()


def _micros_nullable(ts: pd.Series) -> list:
    ts = pd.to_datetime(ts, utc=True)
    return [None if pd.isna(t) else int(t.value // 1000) for t in ts]


@pytest.fixture(scope="module")
def readings() -> pd.DataFrame:
    rows = router_readings(n_routers=6, n_reports=400, seed=3, mean_gap=60)
    # some reports without a loss rate: missing values, which every path must carry as such
    missing = np.random.default_rng(5).random(len(rows)) < 0.03
    return rows.assign(loss_rate=rows["loss_rate"].mask(missing))


def test_batch_threshold_frames_equal_the_core(spark, readings):
    from windowkit.spark import split_rejected, threshold_frames

    df = spark.createDataFrame(readings)
    out = threshold_frames(df, "time", "loss_rate > 0.003", by="router", **PARAMS)
    frames, rejected = split_rejected(out)
    assert rejected.count() == 0
    got = canonical(frames.toPandas())
    expected = core_frames(readings, **PARAMS)
    assert len(expected) > 20
    pd.testing.assert_frame_equal(got, expected)


def test_batch_liberal_threshold_frames_equal_the_core(spark, readings):
    # the extent every framing takes: start reaches back to the report before the frame
    from windowkit.spark import split_rejected, threshold_frames

    params = {"min_duration": "3 rows", "extent": "liberal"}
    frames, _ = split_rejected(threshold_frames(spark.createDataFrame(readings), "time",
                                                "loss_rate > 0.003", by="router", **params))
    expected = core_frames(readings, **params)
    assert (expected["start"] < core_frames(readings, min_duration="3 rows")["start"]).all()
    pd.testing.assert_frame_equal(canonical(frames.toPandas()), expected)


def test_batch_frames_keep_missing_values_and_times_before_1970(spark, readings):
    # The predicate code travels in the time's low bits: a missing value (-1) and a negative
    # time (before 1970) must reach the framer unchanged.
    from windowkit.spark import split_rejected, threshold_frames

    rows = readings.assign(time=readings["time"] - pd.DateOffset(years=60))
    assert rows["time"].max() < pd.Timestamp("1970-01-01", tz="UTC")
    frames, rejected = split_rejected(threshold_frames(
        spark.createDataFrame(rows), "time", "loss_rate > 0.003", by="router", **PARAMS))
    assert rejected.count() == 0
    expected = core_frames(rows, **PARAMS)
    assert expected["n_missing"].sum() > 0
    pd.testing.assert_frame_equal(canonical(frames.toPandas()), expected)


def test_an_integer_time_too_large_to_carry_is_malformed(spark):
    from windowkit.spark import split_rejected, threshold_frames

    temps = [30, 31, 33, 34, 30, 34, 33, 34, 35, 32]
    rows = [("s1", t, x) for t, x in enumerate(temps, 1)] + [("s1", 2 ** 62, 40)]
    df = spark.createDataFrame(rows, "sensor string, t long, temp int")
    frames, rejected = split_rejected(threshold_frames(df, "t", "temp > 32", by="sensor",
                                                       time_unit="us"))
    assert [tuple(r) for r in frames.select("start", "last", "end").orderBy("start").collect()
            ] == [(3, 4, 5), (6, 9, 10)]
    assert [(r.rejected, r.detail) for r in rejected.collect()] == [
        ("malformed", f'{{"sensor":"s1","t":{2 ** 62},"temp":40}}')]


def test_malformed_rows_are_quarantined_with_their_content(spark, readings):
    from windowkit.spark import split_rejected, threshold_frames

    bad = readings.head(3).assign(time=pd.NaT)
    # a null key is malformed too: it belongs to no key's frames (and must not stop the job)
    keyless = readings.head(1).assign(router=None, loss_rate=0.25)
    df = spark.createDataFrame(pd.concat([readings, bad, keyless], ignore_index=True))
    frames, rejected = split_rejected(
        threshold_frames(df, "time", "loss_rate > 0.003", by="router", **PARAMS))
    rejected = rejected.toPandas()
    assert rejected["rejected"].tolist() == ["malformed"] * 4
    # a rejected row is no frame: none of a frame's columns, its status included (which a
    # batch derives in the JVM from the others)
    assert rejected[FRAME_COLUMNS[1:]].isna().all().all()
    details = sorted(rejected["detail"])
    assert sum('"loss_rate":0.25' in d and '"router"' not in d for d in details) == 1
    details = [d for d in details if '"loss_rate":0.25' not in d]
    routers = sorted(bad["router"])
    assert [f'"router":"{r}"' in d for r, d in zip(routers, details, strict=True)] == [True] * 3
    pd.testing.assert_frame_equal(canonical(frames.toPandas()), core_frames(readings, **PARAMS))


def write_arrival_files(readings: pd.DataFrame, folder: str, n_files: int) -> pd.DataFrame:
    """Write the rows in arrival order (with the dataset's disorder) as parquet files, then two
    flush files: a 0-reading for every router far in the future (closes open frames), and one
    row later still whose event time moves the watermark past the first flush."""
    os.makedirs(folder, exist_ok=True)
    far = readings["time"].max() + pd.Timedelta(hours=1)
    flush = pd.DataFrame({"router": sorted(readings["router"].unique())})
    flush = flush.assign(time=far, loss_rate=0.0)
    mover = pd.DataFrame({"router": [flush["router"].iloc[0]],
                          "time": [far + pd.Timedelta(hours=1)], "loss_rate": [0.0]})
    pieces = row_pieces(readings, n_files) + [flush, mover]
    for i, piece in enumerate(pieces):
        piece = piece.astype({"time": "datetime64[us, UTC]"})
        path = os.path.join(folder, f"part-{i:03d}.parquet")
        piece.to_parquet(path, index=False)
        order_files(path, i)
    return pd.concat([readings, flush], ignore_index=True)


def order_files(path, position: float) -> None:
    """The file source reads files by modification time: make arrival order explicit."""
    os.utime(path, (1_700_000_000 + position, 1_700_000_000 + position))


def run_stream(spark, source: str, sink: str, checkpoint: str) -> None:
    from windowkit.spark import threshold_frames

    schema = spark.read.parquet(source).schema
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(source)
    out = threshold_frames(stream, "time", "loss_rate > 0.003", by="router", late="10 minutes",
                           **PARAMS)
    query = (out.writeStream.format("parquet").option("path", sink)
             .option("checkpointLocation", checkpoint).outputMode("append").start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def test_streaming_over_files_equals_the_core_with_out_of_order_rows(spark, readings, tmp_path):
    # The dataset moves 1% of the rows up to 5 reports (150 s) later in the files: within the
    # 10-minute lateness, so the stream must give exactly the in-order core's frames.
    assert not readings["time"].is_monotonic_increasing
    fed = write_arrival_files(readings, str(tmp_path / "in"), n_files=4)
    # A micro-batch of malformed rows only (a null time), between the first two files: set
    # aside with their content, no effect on the frames.
    bad = tmp_path / "in" / "part-000-bad.parquet"
    pd.DataFrame({"router": ["r-bad"], "loss_rate": [0.5],
                  "time": pd.Series([pd.NaT], dtype="datetime64[us, UTC]")}).to_parquet(bad)
    order_files(bad, 0.5)
    run_stream(spark, str(tmp_path / "in"), str(tmp_path / "out"), str(tmp_path / "ck"))
    got = spark.read.parquet(str(tmp_path / "out")).toPandas()
    assert (got["rejected"] != "late").all()
    malformed = got[got["rejected"] == "malformed"]
    assert len(malformed) == 1 and '"router":"r-bad"' in malformed["detail"].iloc[0]
    expected = core_frames(fed, finish=False, **PARAMS)
    pd.testing.assert_frame_equal(canonical(got[got["rejected"].isna()]), expected)


def test_a_query_restarted_on_its_checkpoint_gives_the_same_frames(spark, readings, tmp_path):
    source = tmp_path / "in"
    write_arrival_files(readings, str(tmp_path / "all"), n_files=4)
    files = sorted(os.listdir(tmp_path / "all"))
    os.makedirs(source)
    for name in files[:3]:  # the first run sees only part of the input, then stops
        shutil.copy2(tmp_path / "all" / name, source / name)
    run_stream(spark, str(source), str(tmp_path / "out"), str(tmp_path / "ck"))
    for name in files[3:]:  # more files arrive; the query restarts from its checkpoint
        shutil.copy2(tmp_path / "all" / name, source / name)
    run_stream(spark, str(source), str(tmp_path / "out"), str(tmp_path / "ck"))
    restarted = canonical(spark.read.parquet(str(tmp_path / "out")).toPandas())
    run_stream(spark, str(tmp_path / "all"), str(tmp_path / "out2"), str(tmp_path / "ck2"))
    straight = canonical(spark.read.parquet(str(tmp_path / "out2")).toPandas())
    assert len(straight) > 20
    pd.testing.assert_frame_equal(restarted, straight)


def test_rows_behind_the_watermark_come_out_as_late(spark, tmp_path):
    from windowkit.spark import threshold_frames

    source = tmp_path / "in"
    os.makedirs(source)
    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    batches = [
        pd.DataFrame({"router": ["a"] * 3,
                      "time": [t0 + pd.Timedelta(minutes=m) for m in (0, 1, 2)],
                      "loss_rate": [0.01, 0.01, 0.0]}),
        pd.DataFrame({"router": ["a"], "time": [t0 + pd.Timedelta(minutes=30)],
                      "loss_rate": [0.0]}),
        pd.DataFrame({"router": ["a"], "time": [t0 + pd.Timedelta(minutes=1, seconds=30)],
                      "loss_rate": [0.02]}),
    ]
    for i, b in enumerate(batches):
        b.astype({"time": "datetime64[us, UTC]"}).to_parquet(source / f"p{i}.parquet", index=False)
        order_files(source / f"p{i}.parquet", i)
    schema = spark.read.parquet(str(source)).schema
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(source))
    out = threshold_frames(stream, "time", "loss_rate > 0.003", by="router", late="1 minute")
    query = (out.writeStream.format("memory").queryName("late_rows_test")
             .outputMode("append").start())
    query.processAllAvailable()
    query.stop()
    got = spark.table("late_rows_test").toPandas()
    late = got[got["rejected"] == "late"]
    # the user's own row, as Spark's to_json writes a malformed row (issue #16, point 9)
    late_row = spark.read.parquet(str(source / "p2.parquet"))
    expected = late_row.select(F.to_json(F.struct(*late_row.columns))).first()[0]
    assert late["detail"].tolist() == [expected]
    assert json.loads(expected) == {"router": "a", "time": "2024-01-01T00:01:30.000Z",
                                    "loss_rate": 0.02}
    finals = got[got["status"] == "final"]
    assert finals[["n_tuples"]].values.tolist() == [[2]]


def test_invalid_parameters_fail_before_spark_runs(spark, readings):
    from windowkit.spark import threshold_frames

    df = spark.createDataFrame(readings.head(5))
    with pytest.raises(ValueError, match="`min_duration` must be a positive duration"):
        threshold_frames(df, "time", "loss_rate > 0.003", min_duration="-2 rows")
    with pytest.raises(ValueError, match="`shards` must be an integer in \\[1, inf\\); got 0"):
        threshold_frames(df, "time", "loss_rate > 0.003", shards=0)
    with pytest.raises(ValueError, match="`time` must be a timestamp"):
        threshold_frames(df, "loss_rate", "loss_rate > 0.003")


def test_importing_windowkit_does_not_import_pyspark():
    code = ("import sys, windowkit, windowkit.core.frames, windowkit.core.operator, "
            "windowkit.reference.frames, windowkit.datasets.routers; "
            "print('pyspark' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"


def test_pinned_pandas_works_with_apply_in_pandas_with_state(spark):
    # pyspark 4.1.1's applyInPandasWithState failed here with pandas 3.1.1 (RecordBatch.slice
    # TypeError); the pinned pandas must run it.
    from pyspark.sql.streaming.state import GroupStateTimeout

    def count(key, pdfs, state):
        total = sum(len(p) for p in pdfs) + (state.get[0] if state.exists else 0)
        state.update((total,))
        yield pd.DataFrame({"k": [key[0]], "n": [total]})

    stream = (spark.readStream.format("rate").option("rowsPerSecond", 50).load()
              .selectExpr("CAST(value % 3 AS STRING) AS k"))
    out = stream.groupBy("k").applyInPandasWithState(
        count, "k string, n long", "n long", "Update", GroupStateTimeout.NoTimeout)
    query = out.writeStream.format("memory").queryName("apiws_test").outputMode("update").start()
    try:
        query.processAllAvailable()
        while not spark.table("apiws_test").count():
            query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None
    assert set(spark.table("apiws_test").toPandas()["k"]) <= {"0", "1", "2"}


def _final_bounds(frames) -> list[tuple]:
    return sorted((r.start, r.last, r.end) for r in frames.where("status = 'final'").collect())


def test_nan_and_infinity_are_missing_values_issue16(spark):
    from windowkit.spark import threshold_frames

    # value  1   NaN  1   inf  1        Spark orders NaN above every number: NaN > 0 held
    # frames [-)      [-)      [-)      now each NaN / inf is missing and breaks the frame
    rows = [("k", t, v) for t, v in enumerate([1.0, float("nan"), 1.0, float("inf"), 1.0])]
    df = spark.createDataFrame(rows, "k string, t long, v double")
    out = threshold_frames(df, "t", "v > 0", by="k", time_unit="s")
    assert _final_bounds(out) == [(0, 0, 1), (2, 2, 3), (4, 4, 5)]
    assert out.where("rejected = 'malformed'").count() == 0  # missing, not malformed


def test_integer_time_units_give_the_timestamps_frames_issue16(spark):
    from windowkit.spark import threshold_frames

    seconds = [0, 300, 600, 1500, 1800]  # epoch seconds, reports every 5 minutes
    values = [1, 1, 1, 1, 1]
    params = {"by": "k", "schedule": "5 minutes", "min_duration": "1 rows"}
    as_seconds = spark.createDataFrame([("k", t, v) for t, v in zip(seconds, values,
                                                                    strict=True)],
                                       "k string, t long, v int")
    with pytest.raises(ValueError, match="`time_unit` is required"):
        threshold_frames(as_seconds, "t", "v > 0", **params)
    got = threshold_frames(as_seconds, "t", "v > 0", time_unit="s", **params)
    # the report due at 900 s and 1200 s are absent: two frames, bounds in seconds
    assert _final_bounds(got) == [(0, 600, 900), (1500, 1800, 2100)]
    as_ms = as_seconds.selectExpr("k", "t * 1000 AS t", "v")
    got_ms = threshold_frames(as_ms, "t", "v > 0", time_unit="ms", **params)
    assert _final_bounds(got_ms) == [(0, 600_000, 900_000), (1_500_000, 1_800_000, 2_100_000)]
    as_ts = as_seconds.selectExpr("k", "timestamp_seconds(t) AS t", "v")
    got_ts = threshold_frames(as_ts, "t", "v > 0", **params)
    assert [tuple(int(x.timestamp()) for x in b) for b in _final_bounds(got_ts)] == [
        (0, 600, 900), (1500, 1800, 2100)]


def test_timestamp_ntz_is_wall_clock_time_in_any_session_time_zone_issue16(spark):
    from windowkit.spark import threshold_frames

    # 02:00-03:00 on 2024-03-10 does not exist in Los Angeles: a cast to timestamp moved it
    walls = ["2024-03-10 01:30:00", "2024-03-10 02:00:00", "2024-03-10 02:30:00",
             "2024-03-10 03:00:00"]
    df = spark.createDataFrame([("k", w, 1) for w in walls], "k string, w string, v int"
                               ).selectExpr("k", "cast(w AS timestamp_ntz) AS t", "v")
    params = {"by": "k", "schedule": "30 minutes", "min_duration": "1 rows"}
    zone = spark.conf.get("spark.sql.session.timeZone")
    try:
        results = []
        for tz in ("UTC", "America/Los_Angeles", "Asia/Kolkata"):
            spark.conf.set("spark.sql.session.timeZone", tz)
            out = threshold_frames(df, "t", "v > 0", **params)
            results.append([tuple(str(x) for x in b) for b in _final_bounds(out)])
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    # one frame of 4 reports every 30 minutes, in wall-clock time, in every time zone
    assert results == [[("2024-03-10 01:30:00", "2024-03-10 03:00:00",
                         "2024-03-10 03:30:00")]] * 3


def test_the_predicate_gives_the_same_result_with_ansi_on_and_off_issue16(spark):
    from windowkit.spark import split_rejected, threshold_frames

    rows = [("k", 0, "0.5"), ("k", 1, "n/a"), ("k", 2, "0.7"), ("k", 3, "0.9")]
    df = spark.createDataFrame(rows, "k string, t long, v string")
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    results = []
    try:
        for setting in ("true", "false"):
            spark.conf.set("spark.sql.ansi.enabled", setting)
            frames, rejected = split_rejected(threshold_frames(df, "t", "v > 0.1", by="k",
                                                               time_unit="s"))
            results.append((_final_bounds(frames), [r.detail for r in rejected.collect()]))
    finally:
        spark.conf.set("spark.sql.ansi.enabled", ansi)
    # 'n/a' is a report of unknown value: it breaks the frame and is set aside
    assert results[0] == results[1] == (
        [(0, 0, 1), (2, 3, 4)], ['{"k":"k","t":1,"v":"n/a"}'])
