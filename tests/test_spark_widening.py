"""widen_detect on Spark equals the core operator: batch, and streaming over several
micro-batches with rows out of order within the watermark and a restart from the checkpoint."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from windowkit.core.widening import EpisodeDetector, WindowWidening
from windowkit.datasets.syscalls import case_study

pytestmark = pytest.mark.spark

UNIT = 1_000_000
PARAMS = {"base": 64 * UNIT, "max_length": 16, "levels": 7}  # d_K = 64 * 2**6 units
COLUMNS = ["key", "level", "window_start", "window_end", "first_time", "last_time", "span",
           "times", "ordinals"]


@pytest.fixture(scope="module")
def events() -> pd.DataFrame:
    cs = case_study(n_events=4_000, n_attacks=4, n_decoys=3, max_duration=3_000, seed=11)
    ev = cs.events.copy()
    for c in ("call", "fd", "exe", "ret"):
        ev[c] = ev[c].astype(object).where(ev[c].notna(), None)
    # a far-away row of another key moves every watermark past every window
    flush = {"key": 1, "time": int(ev["time"].max()) + 2**20 * UNIT, "call": "exit",
             "fd": None, "exe": None, "ret": None}
    return pd.concat([ev, pd.DataFrame([flush])], ignore_index=True)


def core_detections(events: pd.DataFrame) -> pd.DataFrame:
    op = WindowWidening(EpisodeDetector("remote-shell"), **PARAMS)
    out = pd.concat([op.process(events), op.finish()], ignore_index=True)
    out = out.assign(times=[list(map(int, t.split(","))) for t in out["times"]],
                     ordinals=[list(map(int, o.split(","))) for o in out["ordinals"]])
    return canonical(out)


def canonical(df: pd.DataFrame) -> pd.DataFrame:
    df = df[COLUMNS].copy()
    for c in ("window_start", "window_end", "first_time", "last_time"):
        if not pd.api.types.is_integer_dtype(df[c]):
            df[c] = _micros(df[c])
    df["times"] = [[_micro(t) for t in ts] for ts in df["times"]]
    df["ordinals"] = [list(map(int, o)) for o in df["ordinals"]]
    df = df.astype({"key": "int64", "level": "int64", "span": "int64"})
    df["_t"] = df["times"].map(tuple)
    return df.sort_values(["key", "window_end", "_t"]).drop(columns="_t").reset_index(drop=True)


def _micro(t) -> int:
    if isinstance(t, (int, np.integer)):
        return int(t)
    return int(pd.Timestamp(t).tz_localize("UTC").value // 1000) if pd.Timestamp(
        t).tzinfo is None else int(pd.Timestamp(t).value // 1000)


def _micros(col: pd.Series) -> pd.Series:
    return pd.Series([_micro(t) for t in col], index=col.index, dtype="int64")


def _spark_frame(spark, events: pd.DataFrame):
    pdf = events.assign(time=pd.to_datetime(events["time"], unit="us"))
    return spark.createDataFrame(
        pdf, "key long, time timestamp, call string, fd string, exe string, ret string")


def test_batch_widen_detect_equals_the_core(spark, events):
    from windowkit.spark import split_rejected, widen_detect

    out = widen_detect(_spark_frame(spark, events), "time", by="key", **PARAMS)
    found, rejected = split_rejected(out)
    assert rejected.count() == 0
    got = canonical(found.toPandas())
    expected = core_detections(events)
    assert len(expected) == 4  # the four injected remote shells
    pd.testing.assert_frame_equal(got, expected)


@pytest.mark.parametrize("unit", ["ms", "us"])
def test_an_integer_time_column_gives_the_same_detections_in_its_own_unit(spark, events, unit):
    from windowkit.spark import split_rejected, widen_detect

    per_unit = {"ms": 1_000, "us": 1}[unit]
    on_time = widen_detect(_spark_frame(spark, events), "time", by="key", **PARAMS)
    as_integers = spark.createDataFrame(
        events.assign(time=events["time"] // per_unit),
        "key long, time long, call string, fd string, exe string, ret string")
    on_ints = widen_detect(as_integers, "time", by="key", time_unit=unit, **PARAMS)
    expected = split_rejected(on_time)[0].toPandas().sort_values("key", ignore_index=True)
    got = split_rejected(on_ints)[0].toPandas().sort_values("key", ignore_index=True)
    assert len(got) == len(expected) == 4
    for column in ("window_start", "window_end", "detected_at", "first_time", "last_time"):
        assert (got[column] == _micros(expected[column]) // per_unit).all(), column
    assert [list(t) for t in got["times"]] == [
        [_micro(x) // per_unit for x in times] for times in expected["times"]]


def test_streaming_out_of_order_with_restart_equals_the_core(spark, events, tmp_path):
    from windowkit.spark import split_rejected, widen_detect

    late_units = 30
    rng = np.random.default_rng(4)
    # arrival order: each row delayed by up to `late_units` units (within the watermark)
    arrival = np.argsort(events["time"].to_numpy() + rng.integers(0, late_units, len(events))
                         * UNIT, kind="stable")
    arrived = events.iloc[arrival].reset_index(drop=True)
    arrived = arrived.assign(time=pd.to_datetime(arrived["time"], unit="us"))
    pieces = np.array_split(np.arange(len(arrived)), 3)
    source, sink, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    source.mkdir()
    schema = "key long, time timestamp, call string, fd string, exe string, ret string"

    def run_query(files: range) -> None:
        stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(
            str(source))
        result, _ = split_rejected(widen_detect(stream, "time", by="key",
                                                  late=f"{late_units} seconds", **PARAMS))
        query = (result.writeStream.format("parquet").option("path", str(sink))
                 .option("checkpointLocation", str(checkpoint)).start())
        try:
            for i in files:  # files added one by one: one micro-batch each
                arrived.iloc[pieces[i]].to_parquet(source / f"part-{i}.parquet", index=False,
                                                   coerce_timestamps="us")
                query.processAllAvailable()
        finally:
            query.stop()

    run_query(range(0, 2))
    run_query(range(2, 3))  # a new query on the same checkpoint: state restored from it
    got = canonical(spark.read.parquet(str(sink)).toPandas())
    pd.testing.assert_frame_equal(got, core_detections(events))


def test_late_rows_keep_every_column_of_the_users_row(spark, tmp_path):
    """The detector's text columns travel once and also carry the late rows' copy of the
    user's row: a late row's ``detail`` is still exactly Spark's ``to_json`` of it."""
    from pyspark.sql import functions as F

    from windowkit.spark import split_rejected, widen_detect

    source = tmp_path / "in"
    source.mkdir()
    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    rows = [(t0, 7, "accept", "3", None, "4", "web"),
            (t0 + pd.Timedelta(minutes=30), 7, "dup", "4", None, "0", "web"),
            (t0 + pd.Timedelta(minutes=1), 7, "execve", None, "/bin/sh", "0", "db")]
    names = ["t", "pid", "call", "fd", "exe", "ret", "host"]
    schema = pa.schema([("t", pa.timestamp("us", tz="UTC")), ("pid", pa.int64()),
                        *[(name, pa.string()) for name in names[2:]]])
    for i, row in enumerate(rows):  # one file per micro-batch; the last row is late
        part = pd.DataFrame([row], columns=names)
        pq.write_table(pa.Table.from_pandas(part, schema=schema, preserve_index=False),
                       source / f"p{i}.parquet")
        os.utime(source / f"p{i}.parquet", (1_700_000_000 + i, 1_700_000_000 + i))
    schema = spark.read.parquet(str(source)).schema
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(
        str(source))
    out = widen_detect(stream, "t", by="pid", detector="remote-shell", base="1 minute",
                       max_length=8, levels=3, late="1 minute")
    query = out.writeStream.format("memory").queryName("widening_late_rows").start()
    query.processAllAvailable()
    query.stop()
    _, rejected = split_rejected(spark.table("widening_late_rows"))
    late_row = spark.read.parquet(str(source / "p2.parquet"))
    expected = late_row.select(F.to_json(F.struct(*late_row.columns))).first()[0]
    assert [(r["rejected"], r["detail"]) for r in rejected.collect()] == [("late", expected)]
    assert '"exe":"/bin/sh"' in expected and '"host":"db"' in expected
