"""A windowkit output stream is a stream other steps can take (issue #36, point 3): the
README's ``threshold_frames`` -> ``fill_frames`` chain, frames into ``multi_granular`` and
Spark's own windowed count, each run to its end on a stream of files, equal the same chain
on the same rows as a batch (computed independently of the streaming path)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import functions as F

from tests.session_kinds import row_pieces
from windowkit.datasets.routers import router_readings

pytestmark = pytest.mark.spark

FRAMES = {"min_duration": "3 rows"}
READINGS = "router string, time timestamp, loss_rate double"
BGP = "router string, time timestamp, kind string"


@pytest.fixture(scope="module")
def rows() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Router readings in time order, ended by a far-off quiet reading per router (it closes
    every frame) and one later still (it moves the watermark past those); BGP messages of the
    same routers, every 2 minutes."""
    readings = router_readings(n_routers=3, n_reports=200, seed=4, mean_gap=40,
                               disorder_rate=0.0)[["router", "time", "loss_rate"]]
    readings = readings.sort_values("time", kind="stable").reset_index(drop=True)
    far = readings["time"].max() + pd.Timedelta(hours=1)
    routers = sorted(readings["router"].unique())
    flush = pd.DataFrame({"router": routers, "time": far, "loss_rate": 0.0})
    mover = pd.DataFrame({"router": routers[:1], "time": far + pd.Timedelta(hours=1),
                          "loss_rate": 0.0})
    readings = pd.concat([readings, flush, mover], ignore_index=True)
    start, end = readings["time"].min(), readings["time"].max()
    times = pd.date_range(start, end, freq="2min")
    bgp = pd.DataFrame({"router": [routers[i % len(routers)] for i in range(len(times))],
                        "time": times, "kind": np.where(np.arange(len(times)) % 2, "UPDATE",
                                                        "WITHDRAW")})
    return readings, bgp


def _write(df: pd.DataFrame, folder: str, parts: int) -> str:
    """``df`` as ``parts`` Parquet files, read by the file source in this order."""
    os.makedirs(folder)
    df = df.astype({"time": "datetime64[us, UTC]"})
    for i, piece in enumerate(row_pieces(df, parts)):
        path = os.path.join(folder, f"part-{i:03d}.parquet")
        piece.to_parquet(path, index=False)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    return folder


def _stream(spark, folder: str, schema: str):
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(folder)


def _run(result, tmp_path, name: str) -> pd.DataFrame:
    """Run a streaming result to its end (every file, then no-data batches) in append mode."""
    sink, checkpoint = str(tmp_path / f"{name}_out"), str(tmp_path / f"{name}_ck")
    query = (result.writeStream.format("parquet").option("path", sink)
             .option("checkpointLocation", checkpoint).outputMode("append").start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return result.sparkSession.read.parquet(sink).toPandas()


def _batch_frames(spark, readings: pd.DataFrame):
    from windowkit.spark import split_rejected, threshold_frames

    df = spark.createDataFrame(readings.astype({"time": "datetime64[us, UTC]"}), READINGS)
    frames, _ = split_rejected(threshold_frames(df, "time", "loss_rate > 0.003", by="router",
                                                **FRAMES))
    return frames


def _stream_frames(spark, readings: pd.DataFrame, tmp_path):
    from windowkit.spark import split_rejected, threshold_frames

    stream = _stream(spark, _write(readings, str(tmp_path / "readings"), 5), READINGS)
    frames, _ = split_rejected(threshold_frames(stream, "time", "loss_rate > 0.003",
                                                by="router", late="2 minutes", **FRAMES))
    return frames


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    df = df[sorted(df.columns)]
    return df.sort_values(list(df.columns)).reset_index(drop=True)


def _same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert len(want) > 0
    pd.testing.assert_frame_equal(_sorted(got), _sorted(want), check_dtype=False)


@pytest.mark.parametrize("filler", ["stream", "table"])
def test_the_readme_chain_on_a_stream_gives_the_batch_result(spark, rows, tmp_path, filler):
    from windowkit.spark import fill_frames

    readings, bgp = rows
    bgp_df = spark.createDataFrame(bgp.astype({"time": "datetime64[us, UTC]"}), BGP)
    want = fill_frames(_batch_frames(spark, readings), bgp_df, "time", by="router",
                       before="2 minutes").toPandas()
    assert want["kind"].notna().sum() >= 3  # frames with BGP messages in them
    frames = _stream_frames(spark, readings, tmp_path)
    data = (_stream(spark, _write(bgp, str(tmp_path / "bgp"), 1), BGP) if filler == "stream"
            else bgp_df)
    got = _run(fill_frames(frames, data, "time", by="router", before="2 minutes",
                           max_frame_length="1 day"), tmp_path, "fill")
    _same(got, want)


def test_a_stream_of_frames_into_multi_granular_gives_the_batch_result(spark, rows, tmp_path):
    from windowkit.spark import multi_granular, split_rejected

    readings, _ = rows
    spec = "RANGES 1 HOUR, 20 MINUTES SLIDES 20 MINUTES, 10 MINUTES"

    def counted(frames):
        final = frames.filter(F.col("status") == "final")
        reports, rejected = split_rejected(multi_granular(final, "end", spec, by="router",
                                                          aggregates=["count"]))
        return reports.drop("shard"), rejected

    want, want_rejected = counted(_batch_frames(spark, readings))
    got, got_rejected = counted(_stream_frames(spark, readings, tmp_path))
    assert want_rejected.count() == 0
    _same(_run(got, tmp_path, "mg"), want.toPandas())
    assert _run(got_rejected, tmp_path, "mg_rejected").empty  # no frame came late


def test_a_stream_of_frames_into_sparks_windowed_count_in_append_mode(spark, rows, tmp_path):
    readings, _ = rows

    def counted(frames):
        return (frames.filter(F.col("status") == "final")
                .groupBy(F.window("end", "30 minutes").alias("w")).count()
                .select(F.col("w.start").alias("w"), "count"))

    want = counted(_batch_frames(spark, readings)).toPandas()
    assert want["count"].sum() >= 3
    _same(_run(counted(_stream_frames(spark, readings, tmp_path)), tmp_path, "win"), want)


def test_a_stream_of_frames_into_persistent_items_gives_the_batch_result(spark, rows,
                                                                         tmp_path):
    from windowkit.spark import persistent_items, split_rejected

    readings, _ = rows

    def persistent(frames):
        final = frames.filter(F.col("status") == "final")
        reported, rejected = split_rejected(persistent_items(
            final, "router", "end", slot="10 minutes", window_slots=6, alpha=0.3, shards=1))
        return reported.drop("shard"), rejected

    want, want_rejected = persistent(_batch_frames(spark, readings))
    got, got_rejected = persistent(_stream_frames(spark, readings, tmp_path))
    assert want_rejected.count() == 0
    want = want.toPandas()
    got = _run(got, tmp_path, "pi")
    # A batch's windows end at its input's last slot; the stream's watermark goes on past the
    # last frame (to the readings' end), closing later windows the batch has no input for.
    last = want["window_end_slot"].max()
    assert (got["window_start"] > want["window_start"].max()).sum() == (
        got["window_end_slot"] > last).sum()
    _same(got[got["window_end_slot"] <= last], want)
    assert _run(got_rejected, tmp_path, "pi_rejected").empty


def test_a_watermark_from_upstream_is_kept_and_rows_behind_it_are_reported_late(spark,
                                                                                tmp_path):
    # The user's own withWatermark: kept (not defined twice); a row behind the watermark of
    # the micro-batch before its own is reported late, with its content, and takes no part.
    from windowkit.spark import split_rejected, threshold_frames

    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    minute = pd.Timedelta(minutes=1)
    first = pd.DataFrame({"router": "r1", "time": [t0 + i * minute for i in range(10)],
                          "loss_rate": [0.01 if 2 <= i < 6 else 0.0 for i in range(10)]})
    late = pd.DataFrame({"router": ["r1"], "time": [t0 + 3 * minute + pd.Timedelta(
        seconds=30)], "loss_rate": [0.02]})
    second = pd.DataFrame({"router": "r1", "time": [t0 + i * minute for i in range(10, 30)],
                           "loss_rate": 0.0})
    folder = str(tmp_path / "in")
    os.makedirs(folder)
    # micro-batches: the first ten minutes; ten more (the watermark is then 8 minutes);
    # the late row and ten more; a row far ahead that moves the watermark past every frame
    for i, piece in enumerate([first, second.iloc[:10], pd.concat([late, second.iloc[10:]]),
                               second.iloc[-1:].assign(time=t0 + 90 * minute)]):
        path = os.path.join(folder, f"part-{i:03d}.parquet")
        piece.astype({"time": "datetime64[us, UTC]"}).to_parquet(path, index=False)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    stream = _stream(spark, folder, READINGS).withWatermark("time", "1 minute")
    frames, rejected = split_rejected(threshold_frames(stream, "time", "loss_rate > 0.003",
                                                       by="router", late="1 hour", **FRAMES))
    got = _run(frames, tmp_path, "up")
    final = got[got["status"] == "final"]
    times = [pd.Timestamp(t).tz_localize(None) for t in (*final["start"], *final["end"])]
    assert times == [(t0 + 2 * minute).tz_localize(None), (t0 + 6 * minute).tz_localize(None)]
    assert final["n_tuples"].tolist() == [4]  # the late row is not in the frame
    bad = _run(rejected, tmp_path, "up_rejected")
    assert bad["rejected"].tolist() == ["late"]
    assert '"loss_rate":0.02' in bad["detail"].iloc[0]


def test_a_stream_of_frames_with_a_schedule_is_refused_in_one_line_where_a_step_needs_a_watermark(
        spark, rows, tmp_path):
    # A scheduled frame can be closed by the watermark itself, its end then behind it: such a
    # stream carries no watermark, and Spark allows no new one after the frames' stateful
    # step (on main: "Redefining watermark is disallowed" once the query ran).
    from windowkit.spark import fill_frames, multi_granular, split_rejected, threshold_frames

    readings, bgp = rows
    stream = _stream(spark, _write(readings, str(tmp_path / "readings"), 2), READINGS)
    frames, _ = split_rejected(threshold_frames(stream, "time", "loss_rate > 0.003",
                                                by="router", schedule="1 minute", **FRAMES))
    filler = _stream(spark, _write(bgp, str(tmp_path / "bgp"), 2), BGP)
    calls = {"fill_frames": lambda: fill_frames(frames, filler, "time", by="router"),
             "multi_granular": lambda: multi_granular(frames.select("router", "end"), "end",
                                                      levels=[("1 hour", "1 hour")],
                                                      by="router", aggregates=["count"])}
    for name, call in calls.items():
        with pytest.raises(ValueError, match=r"carries no watermark .* `schedule`") as caught:
            call()
        assert "\n" not in str(caught.value), name
