"""Threshold frames: core, Spark batch, hand-written gaps-and-islands SQL, Structured Streaming.

10 M router readings over 1,000 keys (``--rows`` to scale). Every path must produce the frames
the SQL query gives (``loss_rate > 0.003`` for at least 3 rows, per router, no schedule); the
script checks that, prints a table of rows/s with ratios to the SQL query, and writes JSON to
``bench/results/frames.json``. A peer for the streaming rate runs on the same files: Spark's own
stateful aggregation (a windowed count), all in the JVM. Floors: the batch transport with no
operator (the rows ``threshold_frames`` ships, packed, shuffled and unpacked; and only read into
Python), and a micro-batch of one row through threshold frames, through a pass-through Python
stateful processor and through Spark's own stateful count. The same frames from SQL, through the
table function ``windowkit_threshold_frames`` (``register_sql``): Spark feeds a table function
row by row, so it runs once (``--sql-function-runs``) and is compared with the batch function.

    .venv/bin/python bench/frames.py             # 10 M rows; medians of 5 runs (3 streaming)
    .venv/bin/python bench/frames.py --rows 1e6  # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pandas as pd

from windowkit.core.frames import ThresholdFramer, predicate_codes
from windowkit.datasets.routers import router_readings

THRESHOLD = 0.003
MIN_ROWS = 3
KEY_COLUMNS = ["router", "start", "last", "end", "n_tuples"]

GAPS_AND_ISLANDS = f"""
WITH flagged AS (
  SELECT router, time, loss_rate > {THRESHOLD} AS hot,
         LAG(loss_rate > {THRESHOLD}) OVER w AS prev_hot,
         LEAD(time) OVER w AS next_time
  FROM readings
  WINDOW w AS (PARTITION BY router ORDER BY time)
), islands AS (
  SELECT *, SUM(CASE WHEN hot AND NOT COALESCE(prev_hot, false) THEN 1 ELSE 0 END)
              OVER (PARTITION BY router ORDER BY time ROWS UNBOUNDED PRECEDING) AS island
  FROM flagged
)
SELECT router, MIN(time) AS start, MAX(time) AS last,
       COALESCE(MAX_BY(next_time, time), MAX(time) + INTERVAL 1 MICROSECOND) AS end,
       COUNT(*) AS n_tuples
FROM islands WHERE hot
GROUP BY router, island
HAVING COUNT(*) >= {MIN_ROWS}
"""


def micros(ts: pd.Series) -> np.ndarray:
    return ts.astype("datetime64[us, UTC]").astype("int64").to_numpy()


def canonical(df: pd.DataFrame) -> pd.DataFrame:
    df = df[KEY_COLUMNS].copy()
    for col in ("start", "last", "end"):
        if not pd.api.types.is_integer_dtype(df[col]):
            df[col] = micros(pd.to_datetime(df[col], utc=True))
    df = df.astype({"router": object, "start": "int64", "last": "int64", "end": "int64",
                    "n_tuples": "int64"})
    return df.sort_values(["router", "start"]).reset_index(drop=True)


def timed(fn, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def run_core(readings: pd.DataFrame, runs: int) -> dict:
    """The core framer alone, on the time-ordered interleaved stream and on key-grouped rows.

    Keys are a Categorical (router names as dictionary codes, as Parquet and Arrow hold them
    and as the Spark adapter passes them); the time-ordered stream is also run with the keys
    as Python strings, which the framer must hash first.
    """
    by_time = readings.sort_values("time", kind="stable")
    t, codes = micros(by_time["time"]), predicate_codes(by_time["loss_rate"].to_numpy() > THRESHOLD)
    keys = pd.Categorical(by_time["router"])
    key_strings = by_time["router"].to_numpy(dtype=object)
    grouped = readings.sort_values(["router", "time"], kind="stable")
    gt, gcodes = micros(grouped["time"]), predicate_codes(
        grouped["loss_rate"].to_numpy() > THRESHOLD)
    gkeys = pd.Categorical(grouped["router"])

    def frame(t, codes, keys):
        framer = ThresholdFramer(f"{MIN_ROWS} rows")
        out = framer.update(t, codes, key=keys)
        return pd.concat([out, framer.finish()], ignore_index=True)

    frame(t[:1000], codes[:1000], keys[:1000])  # compile the numba kernel before timing
    secs, out = timed(lambda: frame(t, codes, keys), runs)
    secs_strings, out_strings = timed(lambda: frame(t, codes, key_strings), runs)
    secs_grouped, out_grouped = timed(lambda: frame(gt, gcodes, gkeys), runs)
    out = canonical(out.rename(columns={"key": "router"}))
    out_strings = canonical(out_strings.rename(columns={"key": "router"}))
    out_grouped = canonical(out_grouped.rename(columns={"key": "router"}))
    return {"time_ordered": (secs, out), "time_ordered_strings": (secs_strings, out_strings),
            "key_grouped": (secs_grouped, out_grouped)}


def run_spark(spark, path: str, runs: int, shards: int) -> dict:
    from pyspark.sql import functions as F

    from windowkit.spark import threshold_frames

    df = spark.read.parquet(path)
    df.createOrReplaceTempView("readings")

    def sql():
        return spark.sql(GAPS_AND_ISLANDS).toPandas()

    def batch():
        out = threshold_frames(df, "time", F.col("loss_rate") > THRESHOLD, by="router",
                               min_duration=f"{MIN_ROWS} rows", shards=shards)
        return out.filter("status = 'final'").toPandas()

    floor_packed, floor_read = transport_floors(df, shards)
    paths = (("sql", sql), ("batch", batch), ("floor_packed", floor_packed),
             ("floor_read", floor_read))
    # One untimed run of each first (JVM JIT, Python workers), then the timed runs
    # interleaved so that every path sees the same machine state.
    for _, fn in paths:
        fn()
    times: dict[str, list[float]] = {name: [] for name, _ in paths}
    outputs = {}
    for _ in range(runs):
        for name, fn in paths:
            t0 = time.perf_counter()
            outputs[name] = fn()
            times[name].append(time.perf_counter() - t0)
    print("Spark seconds per run: " + "; ".join(
        f"{name} " + ", ".join(f"{t:.2f}" for t in times[name]) for name in times),
        file=sys.stderr)
    out = {name: (statistics.median(times[name]), canonical(outputs[name]))
           for name in ("sql", "batch")}
    out.update({name: (statistics.median(times[name]), None)
                for name in ("floor_packed", "floor_read")})
    # Each batch run against the SQL run just before it: the machine's drift cancels out.
    paired = [s / b for s, b in zip(times["sql"], times["batch"], strict=True)]
    out["spark_runs"] = {"sql_seconds": times["sql"], "batch_seconds": times["batch"],
                         "median_paired_ratio": statistics.median(paired)}
    return out


SQL_FUNCTION = f"""
SELECT * FROM windowkit_threshold_frames(
  TABLE(readings), time => 'time', when => 'loss_rate > {THRESHOLD}', by => 'router',
  min_duration => '{MIN_ROWS} rows', shards => {{shards}})
WHERE status = 'final'
"""


def run_sql_function(spark, path: str, runs: int, shards: int) -> tuple[float, pd.DataFrame]:
    """Median seconds and frames of ``windowkit_threshold_frames`` called from SQL on the same
    readings as :func:`run_spark` (same parameters and shards as its batch run)."""
    from windowkit.spark import register_sql

    register_sql(spark)
    spark.read.parquet(path).createOrReplaceTempView("readings")
    times, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = spark.sql(SQL_FUNCTION.format(shards=shards)).toPandas()
        times.append(time.perf_counter() - t0)
    print("SQL table function seconds per run: " + ", ".join(f"{t:.1f}" for t in times),
          file=sys.stderr)
    return statistics.median(times), canonical(out)


def transport_floors(df, shards: int):
    """Two stripped-down jobs over the columns ``threshold_frames`` ships to Python (the
    shard, the key's text, the time in µs with the predicate's code in its two low bits):
    packed where read, shuffled to a task per shard and unpacked there, with no operator (the
    fastest any Python code in the operator's place can go on this transport); and only read
    into Python where read, with no shuffle (what moving the rows out of the JVM costs)."""
    import functools

    import pyarrow as pa
    from pyspark.sql import functions as F

    from windowkit.spark import adapter

    shipped = df.select(
        F.pmod(F.hash("router"), F.lit(shards)).cast("int").alias(adapter.SHARD),
        F.col("router").alias("key"),
        (F.unix_micros("time") * 4 + (F.col("loss_rate") > THRESHOLD).cast("long") + 1
         ).alias("time"))

    def count_packed(batches):
        rows = sum(pa.ipc.open_stream(blob).read_all().num_rows
                   for batch in batches for blob in batch.column(adapter.PAYLOAD).to_pylist())
        yield pa.RecordBatch.from_pydict({"rows": [rows]})

    def count(batches):
        yield pa.RecordBatch.from_pydict({"rows": [sum(b.num_rows for b in batches)]})

    def packed():
        pack = functools.partial(adapter._pack_rows, adapter.spread_group_ids(shards), False,
                                 coded=(adapter.KEY,))
        moved = shipped.mapInArrow(pack, adapter.PACKED_SCHEMA).repartition(shards,
                                                                             adapter.SHARD)
        return moved.mapInArrow(count_packed, "rows long").collect()

    def read():
        return shipped.mapInArrow(count, "rows long").collect()

    return packed, read


def one_row_micro_batches(spark, workdir: str, shards: int) -> dict:
    """Milliseconds a micro-batch of one row takes (median ``triggerExecution`` of the
    micro-batches after the first two, 12 one-row files, one per micro-batch): threshold
    frames; the floor of any Python stateful step, a ``transformWithStateInPandas`` processor
    that keeps one value per key and passes its rows on; Spark's own stateful count."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    from pyspark.sql.streaming import StatefulProcessor

    from windowkit.spark import threshold_frames

    source = os.path.join(workdir, "one_row_in")
    os.makedirs(source)
    start = pd.Timestamp("2024-01-01", tz="UTC")
    for i in range(12):
        file = os.path.join(source, f"part-{i:03d}.parquet")
        pd.DataFrame({"router": ["r1"], "time": [start + pd.Timedelta(minutes=i)],
                      "loss_rate": [0.004 * (i % 2)]}).astype(
            {"time": "datetime64[us, UTC]"}).to_parquet(file, index=False)
        os.utime(file, (1_700_000_000 + i, 1_700_000_000 + i))

    class PassThrough(StatefulProcessor):
        def init(self, handle):
            self.rows = handle.getValueState(
                "rows", T.StructType([T.StructField("rows", T.LongType())]))

        def handleInputRows(self, key, rows, timerValues):
            n = sum(len(r) for r in rows)
            self.rows.update((n,))
            yield pd.DataFrame({"router": [key[0]], "rows": [n]})

        def close(self):
            pass

    def stream():
        return file_stream(spark, source)

    queries = {
        "threshold_frames": lambda: threshold_frames(
            stream(), "time", f"loss_rate > {THRESHOLD}", by="router",
            min_duration=f"{MIN_ROWS} rows", late="10 minutes", shards=shards),
        "floor: pass-through transformWithStateInPandas": lambda: (
            stream().withWatermark("time", "10 minutes").groupBy("router")
            .transformWithStateInPandas(PassThrough(), "router string, rows long", "Append",
                                        "EventTime")),
        "Spark's own stateful count": lambda: (
            stream().withWatermark("time", "10 minutes")
            .groupBy(F.window("time", "1 hour"), "router").agg(F.count("*").alias("n"))),
    }
    out: dict[str, list[float]] = {name: [] for name in queries}
    for run in range(2):  # the first query of each pays its one-time start
        for i, (name, query) in enumerate(queries.items()):
            _, progress, _ = run_query(spark, query(), workdir, f"one_row_{run}_{i}")
            busy = [p for p in progress if p["numInputRows"] > 0][2:]
            out[name].append(statistics.median(p["durationMs"]["triggerExecution"]
                                               for p in busy))
    return {name: ms[-1] for name, ms in out.items()}


def write_stream_files(readings: pd.DataFrame, workdir: str, n_files: int) -> tuple[str, int]:
    """The readings as ``n_files`` parquet files, in arrival order; returns (folder, far in µs).

    A stream has no end of input, so the last file also carries a 0-reading per router at
    ``far`` (closing every open frame) and one a day later that moves the watermark past it.
    """
    source = os.path.join(workdir, "stream_in")
    os.makedirs(source)
    far = readings["time"].max() + pd.Timedelta(days=1)
    closers = pd.DataFrame({"router": sorted(readings["router"].unique()), "time": far,
                            "loss_rate": 0.0})
    mover = closers.head(1).assign(time=far + pd.Timedelta(days=1))
    pieces = [readings.iloc[rows] for rows in np.array_split(np.arange(len(readings)), n_files)]
    pieces[-1] = pd.concat([pieces[-1], closers, mover], ignore_index=True)
    for i, piece in enumerate(pieces):
        file = os.path.join(source, f"part-{i:03d}.parquet")
        piece.astype({"time": "datetime64[us, UTC]"}).to_parquet(file, index=False)
        os.utime(file, (1_700_000_000 + i, 1_700_000_000 + i))
    return source, int(micros(pd.Series([far]))[0])


def run_query(spark, out, workdir: str, name: str) -> tuple[float, list, str]:
    """Seconds to run a streaming query over every file present, its progress, its sink."""
    sink = os.path.join(workdir, f"{name}_out")
    t0 = time.perf_counter()
    query = (out.writeStream.format("parquet").option("path", sink)
             .option("checkpointLocation", os.path.join(workdir, f"{name}_ck")).start())
    query.processAllAvailable()
    secs = time.perf_counter() - t0
    progress = query.recentProgress
    query.stop()
    return secs, progress, sink


def file_stream(spark, source: str):
    schema = spark.read.parquet(source).schema
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(source)


def run_streaming(spark, source: str, workdir: str, shards: int, name: str = "frames"):
    """End to end: the files, one per micro-batch, through threshold_frames to a parquet sink."""
    from windowkit.spark import threshold_frames

    out = threshold_frames(file_stream(spark, source), "time", f"loss_rate > {THRESHOLD}",
                           by="router", min_duration=f"{MIN_ROWS} rows", late="10 minutes",
                           shards=shards)
    secs, progress, sink = run_query(spark, out, workdir, name)
    result = spark.read.parquet(sink)
    return secs, canonical(result.filter("status = 'final'").toPandas()), progress


def run_streaming_peer(spark, source: str, workdir: str, name: str = "peer") -> float:
    """Spark's own stateful streaming on the same files, all in the JVM: readings and high-loss
    readings per router and hour (same watermark). Not frames: the cost of a stateful
    Structured Streaming query here, against which the frames query's rate can be read."""
    from pyspark.sql import functions as F

    out = (file_stream(spark, source).withWatermark("time", "10 minutes")
           .groupBy(F.window("time", "1 hour"), "router")
           .agg(F.count("*").alias("readings"),
                F.count_if(F.col("loss_rate") > THRESHOLD).alias("high")))
    secs, _, _ = run_query(spark, out, workdir, name)
    return secs


def run_streams(spark, source: str, workdir: str, shards: int, runs: int) -> dict:
    """``runs`` fresh queries (own checkpoint and sink) of the frames and of the peer,
    alternating. The first query of the process also pays the JVM's one-time start of
    streaming (classes, RocksDB, the JIT), which a long-running query pays once."""
    out: dict = {"seconds": [], "frames": [], "progress": [], "peer_seconds": []}
    for i in range(runs):
        secs, frames, progress = run_streaming(spark, source, workdir, shards, f"frames{i}")
        out["seconds"].append(secs)
        out["frames"].append(frames)
        out["progress"].append(progress)
        out["peer_seconds"].append(run_streaming_peer(spark, source, workdir, f"peer{i}"))
    order = sorted(range(runs), key=out["seconds"].__getitem__)
    out["median_run"] = order[runs // 2]  # of an even count, the slower middle one
    return out


def micro_batch_profile(progress: list[dict]) -> dict:
    """Where a streaming run's time goes: the first micro-batch (worker start-up, planning,
    every row buffered until the first watermark), the later full ones, and the fixed cost of
    a micro-batch that carries (almost) no rows."""
    def secs(p: dict) -> float:
        return p["durationMs"]["triggerExecution"] / 1000

    full = [p for p in progress if p["numInputRows"] >= 1000 and p["batchId"] > 0]
    tiny = [p for p in progress if p["numInputRows"] <= 1]
    return {
        "micro_batches": len(progress),
        "first_batch_s": round(secs(progress[0]), 2),
        "later_full_batches_rows_per_s": sum(p["numInputRows"] for p in full)
        / sum(secs(p) for p in full),
        "empty_batch_s": round(statistics.median(secs(p) for p in tiny), 2) if tiny else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=10e6, help="readings (default 10 M)")
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5, help="runs per timing (median)")
    parser.add_argument("--files", type=int, default=10, help="files for the streaming run")
    parser.add_argument("--stream-runs", type=int, default=3,
                        help="streaming queries per path (median)")
    parser.add_argument("--sql-function-runs", type=int, default=1,
                        help="runs of the SQL table function (0: skip it)")
    parser.add_argument("--shards", type=int, default=None)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--output", default=os.path.join(os.path.dirname(__file__), "results"))
    args = parser.parse_args()

    n_reports = int(args.rows / args.keys / 0.98)
    readings = router_readings(n_routers=args.keys, n_reports=n_reports, seed=1)
    n = len(readings)
    print(f"{n:,} readings over {args.keys} routers", file=sys.stderr)
    workdir = tempfile.mkdtemp(prefix="wk-bench-frames-")
    path = os.path.join(workdir, "readings.parquet")
    readings.astype({"time": "datetime64[us, UTC]"}).to_parquet(path, index=False)

    results = run_core(readings, args.runs)
    from windowkit.spark import windowkit_session

    spark = windowkit_session(args.master, app_name="bench-frames", quiet=True)
    shards = args.shards or int(spark.conf.get("spark.sql.shuffle.partitions"))
    results.update(run_spark(spark, path, args.runs, shards))
    spark_runs = results.pop("spark_runs")
    if args.sql_function_runs:
        results["sql_function"] = run_sql_function(spark, path, args.sql_function_runs, shards)
    source, far_us = write_stream_files(readings, workdir, args.files)
    stream_runs = run_streams(spark, source, workdir, shards, args.stream_runs)
    one_row = one_row_micro_batches(spark, workdir, shards)
    median_run = stream_runs["median_run"]
    profile = micro_batch_profile(stream_runs["progress"][median_run])
    results["streaming"] = (stream_runs["seconds"][median_run],
                            stream_runs["frames"][median_run])
    results["streaming_peer"] = (statistics.median(stream_runs["peer_seconds"]), None)
    shutil.rmtree(workdir, ignore_errors=True)

    expected = results["sql"][1]
    rows = []
    labels = {
        "sql": "(c) gaps-and-islands Spark SQL (lag, running sum, groupBy island)",
        "time_ordered": "(a) core ThresholdFramer, time-ordered stream of all keys",
        "time_ordered_strings": "(a) same, keys as Python strings (hashed by the framer)",
        "key_grouped": "(a') core ThresholdFramer, rows grouped by key",
        "batch": "(b) threshold_frames, Spark batch",
        "sql_function": "(g) windowkit_threshold_frames, the SQL table function",
        "floor_packed": "(f) floor: (b)'s shipped rows packed, shuffled, unpacked, no operator",
        "floor_read": "(f') floor: (b)'s shipped rows read into Python, no shuffle",
        "streaming": f"(d) threshold_frames, Structured Streaming, {args.files} files",
        "streaming_peer": "(e) peer: Spark's own hourly count per router, streaming, same files",
    }
    # A stream has no end of input: the frames still open when the data ends are closed by the
    # appended 0-readings at `far`, where the bounded SQL query ends them at last + 1 µs.
    expected_stream = expected.copy()
    still_open = expected_stream["end"] == expected_stream["last"] + 1
    expected_stream.loc[still_open, "end"] = far_us
    for name in ("sql", "time_ordered", "time_ordered_strings", "key_grouped", "batch",
                 "sql_function", "floor_packed", "floor_read", "streaming", "streaming_peer"):
        if name not in results:
            continue
        secs, frames = results[name]
        if frames is None:  # the peer computes something else: a rate to compare, no frames
            same, n_frames = None, None
        else:
            same = frames.equals(expected_stream if name == "streaming" else expected)
            n_frames = len(frames)
        rows.append({"path": labels[name], "seconds": round(secs, 3),
                     "rows_per_s": n / secs, "ratio_to_sql": results["sql"][0] / secs,
                     "frames": n_frames, "same_frames_as_sql": same})
    width = max(len(r["path"]) for r in rows)
    print(f"\n{'path':<{width}}  {'seconds':>8}  {'M rows/s':>9}  {'x SQL':>6}  "
          f"{'frames':>7}  same as SQL")
    for r in rows:
        print(f"{r['path']:<{width}}  {r['seconds']:>8.2f}  {r['rows_per_s'] / 1e6:>9.2f}  "
              f"{r['ratio_to_sql']:>6.2f}  {r['frames'] or '-':>7}  "
              f"{'-' if r['same_frames_as_sql'] is None else r['same_frames_as_sql']}")
    if "sql_function" in results:
        print(f"\nthe SQL table function against threshold_frames (batch): "
              f"{results['sql_function'][0] / results['batch'][0]:.1f}x its time")
    print(f"\nSpark batch vs SQL, median of the runs' paired ratios: "
          f"{spark_runs['median_paired_ratio']:.2f}")
    print(f"streaming, {args.stream_runs} queries: "
          f"{', '.join(f'{t:.1f}' for t in stream_runs['seconds'])} s (the first query of the "
          f"process pays streaming's one-time start); peer "
          f"{', '.join(f'{t:.1f}' for t in stream_runs['peer_seconds'])} s")
    print(f"streaming, median query, {profile['micro_batches']} micro-batches: first "
          f"{profile['first_batch_s']} s; later full ones "
          f"{profile['later_full_batches_rows_per_s'] / 1e6:.2f} M rows/s; a micro-batch of "
          f"at most one row {profile['empty_batch_s']} s")
    print("a micro-batch of one row (ms, median, second query of each): " + "; ".join(
        f"{name} {ms:.0f}" for name, ms in one_row.items()))
    os.makedirs(args.output, exist_ok=True)
    report = {"rows": n, "keys": args.keys, "runs": args.runs, "master": args.master,
              "shards": shards, "machine": f"{platform.machine()} {os.cpu_count()} cores",
              "results": rows, "spark_runs": spark_runs, "streaming_profile": profile,
              "one_row_micro_batch_ms": one_row,
              "streaming_runs": {"frames_seconds": stream_runs["seconds"],
                                 "peer_seconds": stream_runs["peer_seconds"],
                                 "every_query_same_frames": all(
                                     f.equals(expected_stream) for f in stream_runs["frames"])}}
    with open(os.path.join(args.output, "frames.json"), "w") as fh:
        json.dump(report, fh, indent=2)
    if (any(r["same_frames_as_sql"] is False for r in rows)
            or not report["streaming_runs"]["every_query_same_frames"]):
        sys.exit("some path did not reproduce the SQL query's frames")


if __name__ == "__main__":
    main()
