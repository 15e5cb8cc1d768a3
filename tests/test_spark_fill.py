"""fill_frames (Definition 6) equals the brute-force filler: batch (bucketed join), a stream of
frames against a stored table, and a stream of frames against a stream of filler rows."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from tests.session_kinds import row_pieces
from windowkit.core.frames import DeltaFramer
from windowkit.datasets.traffic import traffic_speeds
from windowkit.reference.fill import fill_frames_reference

pytestmark = pytest.mark.spark

BEFORE, AFTER = 30_000_000, 20_000_000  # "30 seconds", "20 seconds"


def micros(ts: pd.Series) -> np.ndarray:
    return ts.astype("datetime64[us, UTC]").astype("int64").to_numpy()


@pytest.fixture(scope="module")
def frames() -> pd.DataFrame:
    """Delta frames of one day's speeds (µs times), as the core computes them."""
    rows = traffic_speeds(n_sensors=3, n_reports=200, seed=5)
    framer = DeltaFramer(6.0, min_duration="3 rows")
    out = framer.update(micros(rows["time"]), rows["speed"].to_numpy(),
                        key=rows["sensor"].to_numpy())
    out = pd.concat([out, framer.finish()], ignore_index=True).rename(columns={"key": "sensor"})
    return out.astype({"end": "int64"})


@pytest.fixture(scope="module")
def filler() -> pd.DataFrame:
    """Another stream over the same sensors and period: vehicle counts, at other times."""
    rows = traffic_speeds(n_sensors=3, n_reports=200, seed=6)
    rows = rows.assign(time=rows["time"] + pd.Timedelta(seconds=7))
    return rows[["sensor", "time", "count"]].rename(columns={"time": "seen"})


def as_spark_times(df: pd.DataFrame, columns) -> pd.DataFrame:
    return df.assign(**{c: pd.to_datetime(df[c], unit="us", utc=True) for c in columns})


def utc(t) -> pd.Timestamp:
    t = pd.Timestamp(t)
    return t.tz_convert("UTC") if t.tzinfo else t.tz_localize("UTC")


def pairs(df: pd.DataFrame) -> list[tuple]:
    return sorted((s, f, utc(t), c) for s, f, t, c in zip(df["sensor"], df["frame_id"],
                                                          df["seen"], df["count"], strict=True))


def expected_pairs(frames, filler, by="sensor") -> list[tuple]:
    data = filler.assign(seen=micros(filler["seen"]))
    ref = fill_frames_reference(frames, data, "seen", by=by, before=BEFORE, after=AFTER)
    return sorted(zip(ref["sensor"], ref["frame_id"], pd.to_datetime(ref["seen"], unit="us",
                                                                     utc=True),
                      ref["count"], strict=True))


def test_batch_fill_attaches_the_brute_force_rows(spark, frames, filler):
    from windowkit.spark import fill_frames

    sf = spark.createDataFrame(as_spark_times(frames, ["start", "end", "last"]))
    out = fill_frames(sf, spark.createDataFrame(filler), "seen", by="sensor",
                      before="30 seconds", after="20 seconds", bucket="2 minutes").toPandas()
    expected = expected_pairs(frames, filler)
    assert len(expected) > 50
    assert pairs(out) == expected


def test_batch_fill_aggregates_per_frame_across_keys(spark, frames, filler):
    from pyspark.sql import functions as F

    from windowkit.spark import fill_frames

    # across keys: every frame counts the filler rows of all sensors; a frame far from any
    # row still comes out, with a count of 0
    lonely = frames.head(1).assign(sensor="nowhere", start=0, end=10, last=5)
    table = pd.concat([frames, lonely], ignore_index=True)
    sf = spark.createDataFrame(as_spark_times(table, ["start", "end", "last"]))
    out = fill_frames(sf, spark.createDataFrame(filler), "seen", before="30 seconds",
                      after="20 seconds", aggregates={"n": F.count("count"),
                                                      "vehicles": F.sum("count")})
    got = out.toPandas().sort_values(["sensor", "frame_id"])
    data = filler.assign(seen=micros(filler["seen"]))
    ref = fill_frames_reference(table, data, "seen", before=BEFORE, after=AFTER)
    counts = ref.groupby(["sensor", "frame_id"]).size()
    assert got["n"].tolist() == [int(counts.get((s, f), 0))
                                 for s, f in zip(got["sensor"], got["frame_id"], strict=True)]
    assert got[got["sensor"] == "nowhere"]["n"].tolist() == [0]
    sums = ref.groupby(["sensor", "frame_id"])["count"].sum()
    with_rows = got[got["n"] > 0]
    assert with_rows["vehicles"].tolist() == [
        int(sums[(s, f)]) for s, f in zip(with_rows["sensor"], with_rows["frame_id"], strict=True)]


def write_files(df: pd.DataFrame, folder, n_files: int, offset: float = 0.0) -> None:
    os.makedirs(folder, exist_ok=True)
    # Spark reads microsecond timestamps only (pandas writes nanoseconds by default)
    df = df.astype({c: "datetime64[us, UTC]" for c in df.columns
                    if pd.api.types.is_datetime64_any_dtype(df[c])})
    for i, piece in enumerate(row_pieces(df, n_files)):
        path = os.path.join(folder, f"part-{i:03d}.parquet")
        piece.to_parquet(path, index=False)
        os.utime(path, (1_700_000_000 + i + offset, 1_700_000_000 + i + offset))


def run(query_df, sink, checkpoint) -> None:
    query = (query_df.writeStream.format("parquet").option("path", str(sink))
             .option("checkpointLocation", str(checkpoint)).outputMode("append").start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def test_streaming_frames_against_a_stored_table(spark, frames, filler, tmp_path):
    # frames arrive over three micro-batches; the filler is a stored table
    from windowkit.spark import fill_frames

    spark_frames = as_spark_times(frames.sort_values("last"), ["start", "end", "last"])
    write_files(spark_frames, tmp_path / "frames", 3)
    schema = spark.read.parquet(str(tmp_path / "frames")).schema
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(
        str(tmp_path / "frames"))
    out = fill_frames(stream, spark.createDataFrame(filler), "seen", by="sensor",
                      before="30 seconds", after="20 seconds")
    run(out, tmp_path / "out", tmp_path / "ck")
    got = spark.read.parquet(str(tmp_path / "out")).toPandas()
    assert pairs(got) == expected_pairs(frames, filler)


def test_streaming_frames_against_a_streaming_filler_between_join(spark, frames, filler,
                                                                  tmp_path):
    from windowkit.spark import fill_frames

    spark_frames = as_spark_times(frames.sort_values("last"), ["start", "end", "last"])
    write_files(spark_frames, tmp_path / "frames", 3)
    write_files(filler.sort_values("seen"), tmp_path / "filler", 3)
    f_schema = spark.read.parquet(str(tmp_path / "frames")).schema
    d_schema = spark.read.parquet(str(tmp_path / "filler")).schema
    f_stream = spark.readStream.schema(f_schema).option("maxFilesPerTrigger", 1).parquet(
        str(tmp_path / "frames"))
    d_stream = spark.readStream.schema(d_schema).option("maxFilesPerTrigger", 1).parquet(
        str(tmp_path / "filler"))
    out = fill_frames(f_stream, d_stream, "seen", by="sensor", before="30 seconds",
                      after="20 seconds", max_frame_length="2 hours", late="2 hours")
    run(out, tmp_path / "out", tmp_path / "ck")
    got = spark.read.parquet(str(tmp_path / "out")).toPandas()
    assert pairs(got) == expected_pairs(frames, filler)


def test_invalid_parameters_fail_before_spark_runs(spark, frames, filler):
    from windowkit.spark import fill_frames

    sf = spark.createDataFrame(as_spark_times(frames, ["start", "end", "last"]))
    data = spark.createDataFrame(filler)
    with pytest.raises(ValueError, match="`before` must be a positive duration"):
        fill_frames(sf, data, "seen", before="-3 seconds")
    with pytest.raises(ValueError, match="`time` must be a column of `data`"):
        fill_frames(sf, data, "when")
    with pytest.raises(ValueError, match="`by` must be a column of both"):
        fill_frames(sf, data, "seen", by="router")


def test_streaming_frames_aggregated_from_a_stored_table(spark, frames, filler, tmp_path):
    # per-frame counts on a stream: each frame's group settles when the watermark passes it
    from pyspark.sql import functions as F

    from windowkit.spark import fill_frames

    far = frames.tail(1).assign(frame_id=999, start=frames["end"].max() + 10 ** 10,
                                end=frames["end"].max() + 2 * 10 ** 10,
                                last=frames["end"].max() + 10 ** 10)
    spark_frames = as_spark_times(pd.concat([frames.sort_values("last"), far]),
                                  ["start", "end", "last"])
    write_files(spark_frames, tmp_path / "frames", 3)
    schema = spark.read.parquet(str(tmp_path / "frames")).schema
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(
        str(tmp_path / "frames"))
    out = fill_frames(stream, spark.createDataFrame(filler), "seen", by="sensor",
                      before="30 seconds", after="20 seconds", aggregates={"n": F.count("count")},
                      late="1 minute")
    run(out, tmp_path / "out", tmp_path / "ck")
    got = spark.read.parquet(str(tmp_path / "out")).toPandas()
    got = dict(zip(zip(got["sensor"], got["frame_id"], strict=True), got["n"], strict=True))
    expected = pd.Series([p[:2] for p in expected_pairs(frames, filler)]).value_counts()
    assert got == {k: int(v) for k, v in expected.items()}


def _with_bad_rows(spark, filler: pd.DataFrame):
    """The filler with a row of no key, one of no time and one of an unparsable time (times
    as strings, as a CSV gives them)."""
    good = filler.head(20).assign(seen=filler["seen"].head(20).dt.strftime("%Y-%m-%d %H:%M:%S"))
    first = good.iloc[0]
    bad = pd.DataFrame({"sensor": [None, first["sensor"], first["sensor"]],
                        "seen": [first["seen"], None, "yesterday"], "count": [1, 2, 3]})
    return spark.createDataFrame(pd.concat([good, bad], ignore_index=True),
                                 "sensor string, seen string, count long")


def test_batch_fill_returns_the_filler_rows_it_cannot_place_as_rejected_rows(spark, frames,
                                                                          filler):
    from pyspark.sql import functions as F

    from windowkit.spark import fill_frames, split_rejected

    sf = spark.createDataFrame(as_spark_times(frames, ["start", "end", "last"]))
    data = _with_bad_rows(spark, filler)
    for aggregates in (None, {"n": F.count("count")}):
        filled, rejected = split_rejected(fill_frames(sf, data, "seen", by="sensor",
                                                    aggregates=aggregates))
        got = sorted((r.rejected, r.detail) for r in rejected.collect())
        assert [reason for reason, _ in got] == ["malformed"] * 3
        assert sorted(json.loads(d)["count"] for _, d in got) == [1, 2, 3]
        assert "rejected" not in filled.columns and filled.count() > 0


def test_streaming_fill_returns_the_filler_rows_it_cannot_place_as_rejected_rows(
        spark, frames, filler, tmp_path):
    from windowkit.spark import fill_frames, split_rejected

    spark_frames = as_spark_times(frames.sort_values("last"), ["start", "end", "last"])
    write_files(spark_frames, tmp_path / "frames", 2)
    rows = _with_bad_rows(spark, filler).toPandas()
    write_files(rows, tmp_path / "filler", 2)
    f_stream = spark.readStream.schema(spark.read.parquet(str(tmp_path / "frames")).schema
                                       ).option("maxFilesPerTrigger", 1).parquet(
        str(tmp_path / "frames"))
    d_stream = spark.readStream.schema("sensor string, seen string, count long").option(
        "maxFilesPerTrigger", 1).parquet(str(tmp_path / "filler"))
    out = fill_frames(f_stream, d_stream, "seen", by="sensor", before="30 seconds",
                      max_frame_length="2 hours", late="2 hours")
    run(out, tmp_path / "out", tmp_path / "ck")
    filled, rejected = split_rejected(spark.read.parquet(str(tmp_path / "out")))
    assert sorted(json.loads(r.detail)["count"] for r in rejected.collect()) == [1, 2, 3]
    assert {r.rejected for r in rejected.collect()} == {"malformed"}
    assert filled.count() > 0
