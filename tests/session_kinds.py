"""Every public function of ``windowkit.spark``, as small cases run on a session of either kind.

``tests/test_session_kinds.py`` runs each case on the suite's classic session and, in a
subprocess (a process that has made a Spark Connect session cannot make classic DataFrames),
on a Spark Connect session of the same server, and compares the rows. Run as a script, this
module is that subprocess: ``python tests/session_kinds.py sc://HOST:PORT|local[N] OUT_DIR
[CASE ...]`` writes ``OUT_DIR/CASE.parquet`` for each case.

A case takes the session and a fresh folder and returns its rows as a pandas DataFrame; a case
that raises returns its error's class and first line instead, so bad input must fail the same
way on both kinds. Each streaming case (its name ends in ``_stream``) runs one query to its
end through windowkit's exactly-once sink, on a session of its own kind in a process of its own.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq

T0 = dt.datetime(2024, 1, 1)
SECOND = dt.timedelta(seconds=1)

Case = Callable[[object, str], pd.DataFrame]
CASES: dict[str, Case] = {}


def case(function: Case) -> Case:
    CASES[function.__name__] = function
    return function


def readings(spark, n: int = 240):
    """Loss reports of three routers every 10 s, with a malformed row and a NaN."""
    rng = np.random.default_rng(7)
    rows = [(f"r{i % 3}", T0 + 10 * (i // 3) * SECOND, float(rng.uniform(0, 0.006)))
            for i in range(n)]
    rows += [("r1", None, 0.01), (None, T0, 0.01), ("r2", T0 + 5 * SECOND, float("nan"))]
    return spark.createDataFrame(rows, "router string, time timestamp, loss_rate double")


def flows(spark, n: int = 600):
    """Connections: a source, a destination, bytes, every 2 s."""
    rng = np.random.default_rng(11)
    rows = [(f"s{int(rng.integers(0, 4))}", f"d{int(rng.zipf(1.6)) % 20}",
             T0 + 2 * i * SECOND, int(rng.integers(1, 500))) for i in range(n)]
    return spark.createDataFrame(rows, "src string, dst string, time timestamp, bytes long")


def syscalls(spark):
    """Two remote shells (one slow) and noise, in processes 7, 8 and 9."""
    shell = [(0, "accept", "3", None, "4"), (3, "dup", "4", None, "0"),
             (5, "dup", "4", None, "1"), (9, "dup", "4", None, "2"),
             (20, "execve", None, "/bin/sh", "0")]
    rows = [(7, T0 + s * SECOND, *rest) for s, *rest in shell]
    rows += [(8, T0 + 30 * s * SECOND, *rest) for s, *rest in shell]
    rows += [(9, T0 + s * SECOND, "read", "3", None, "10") for s in range(40)]
    return spark.createDataFrame(
        rows, "pid long, time timestamp, call string, fd string, exe string, ret string")


def site_frames(spark):
    """Frames of (site, router) pairs (a string and an int, a composite key) that overlap in
    time, and filler rows of every pair (and of a pair no frame has) every 7 s, with a row of
    no router and one of no time: ``(frames, filler)``."""
    frames, filler = [], []
    for site in ("a", "b"):
        for router in (1, 2):
            for k in range(3):
                start = T0 + (100 * k + 10 * router) * SECOND
                frames.append((site, router, len(frames), start, start + 60 * SECOND,
                               start + 50 * SECOND, "final"))
    for i, (site, router) in enumerate([(s, r) for s in "abc" for r in (1, 2)] * 50):
        filler.append((site, router, T0 + 7 * i * SECOND, i))
    filler += [("a", None, T0 + 120 * SECOND, -1), ("a", 1, None, -2)]
    frames = spark.createDataFrame(frames, "site string, router int, frame_id long, "
                                   "start timestamp, end timestamp, last timestamp, "
                                   "status string")
    filler = spark.createDataFrame(filler, "site string, router int, t timestamp, v long")
    return frames, filler


def row_pieces(frame: pd.DataFrame, parts: int) -> list[pd.DataFrame]:
    """``frame``'s rows in their order, cut into ``parts`` consecutive pieces whose sizes
    differ by one row at most."""
    return [frame.iloc[rows] for rows in np.array_split(np.arange(len(frame)), parts)]


def stream_of(spark, frame, folder: str, parts: int = 4):
    """``frame``'s rows (in time order) as ``parts`` Parquet files read one per micro-batch."""
    # Arrow keeps timestamps as instants, whatever the session's time zone
    table = frame.toArrow()
    table = table.replace_schema_metadata(None)  # a Connect session's plan metrics: not data
    order = pc.sort_indices(table, [("time", "ascending")], null_placement="at_start")
    table = table.take(order)
    os.makedirs(folder)
    for i in range(parts):
        start, end = i * len(table) // parts, (i + 1) * len(table) // parts
        path = f"{folder}/part-{i}.parquet"
        pq.write_table(table.slice(start, end - start), path)
        # Spark reads new files in the order of their modification times (in milliseconds):
        # files written within one would be read in any order, and rows of the later ones
        # could then be late
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    return (spark.readStream.schema(frame.schema).option("maxFilesPerTrigger", 1)
            .parquet(folder))


def run_stream(result, folder: str) -> pd.DataFrame:
    """Run a streaming result to its end through windowkit's exactly-once sink."""
    from windowkit.spark.sinks import write_stream_exactly_once

    query = write_stream_exactly_once(result, f"{folder}/out", f"{folder}/ck",
                                      lambda batch: {"rows": batch})
    query.awaitTermination()
    return pd.read_parquet(f"{folder}/out/rows").drop(columns="batch")


# --------------------------------------------------------------------------------- frames
@case
def threshold_batch(spark, folder):
    from windowkit.spark import split_rejected, threshold_frames

    out = threshold_frames(readings(spark), "time", "loss_rate > 0.003", by="router",
                           min_duration="2 rows", schedule="10 seconds", shards=2)
    frames, rejected = split_rejected(out)
    return pd.concat([frames.toPandas(), rejected.toPandas()])


@case
def threshold_nanoseconds(spark, folder):
    # integer times in ns, some 999 ns into a µs: divided exactly on either kind
    from pyspark.sql import functions as F

    from windowkit.spark import threshold_frames

    ns = F.unix_micros("time") * 1000 + F.when(F.col("loss_rate") > 0.003, 999).otherwise(1)
    df = readings(spark).withColumn("time", ns)
    return threshold_frames(df, "time", "loss_rate > 0.003", by="router", time_unit="ns",
                            shards=2).toPandas()


@case
def threshold_stream(spark, folder):
    from windowkit.spark import threshold_frames

    stream = stream_of(spark, readings(spark), f"{folder}/in")
    return run_stream(threshold_frames(stream, "time", "loss_rate > 0.003", by="router",
                                       late="1 minute", shards=2), folder)


@case
def framings_batch(spark, folder):
    from windowkit.core.frames import IncreasingTrend
    from windowkit.spark import aggregate_frames, boundary_frames, custom_frames, delta_frames

    df = readings(spark)
    parts = [
        boundary_frames(df, "time", "loss_rate", 0.002, by="router", shards=2),
        delta_frames(df, "time", "loss_rate", 0.003, by="router"),
        aggregate_frames(df, "time", "loss_rate", "sum", ">", 0.01, by="router"),
        custom_frames(df, "time", "loss_rate", IncreasingTrend(), by="router"),
    ]
    return pd.concat([p.toPandas().assign(kind=i) for i, p in enumerate(parts)])


@case
def longest_and_fill(spark, folder):
    from windowkit.spark import fill_frames, longest_frame, threshold_frames

    frames = threshold_frames(readings(spark), "time", "loss_rate > 0.003", by="router",
                              min_duration="2 rows")
    from pyspark.sql import functions as F

    filler = flows(spark).select(F.regexp_replace("src", "s", "r").alias("router"), "time",
                                 "bytes")
    filled = fill_frames(frames, filler, "time", by="router", before="20 seconds")
    return pd.concat([longest_frame(frames, by="router").toPandas().assign(part="longest"),
                      filled.toPandas().assign(part="filled")])


@case
def fill_chain_stream(spark, folder):
    """The README's chain on streams: frames of a stream, filled from another stream."""
    from pyspark.sql import functions as F

    from windowkit.spark import fill_frames, split_rejected, threshold_frames

    frames, _ = split_rejected(threshold_frames(
        stream_of(spark, readings(spark), f"{folder}/in"), "time", "loss_rate > 0.003",
        by="router", min_duration="2 rows", late="1 minute", shards=2))
    filler = flows(spark).select(F.regexp_replace("src", "s", "r").alias("router"), "time",
                                 "bytes")
    return run_stream(fill_frames(frames, stream_of(spark, filler, f"{folder}/filler"),
                                  "time", by="router", before="20 seconds"), folder)


@case
def fill_composite_key_batch(spark, folder):
    """A composite key given as names and Columns, rows and aggregates, rejected rows too."""
    from pyspark.sql import functions as F

    from windowkit.spark import fill_frames

    frames, filler = site_frames(spark)
    rows = fill_frames(frames, filler, F.col("t"), by=["site", F.col("router")],
                       before="10 seconds")
    counts = fill_frames(frames, filler, "t", by=["site", "router"],
                         aggregates={"n": F.count("v")})
    return pd.concat([rows.toPandas().assign(part="rows"),
                      counts.toPandas().assign(part="counts")])


@case
def fill_composite_key_stream(spark, folder):
    """Frames of a stream filled from another stream on a key of two columns."""
    from pyspark.sql import functions as F

    from windowkit.spark import fill_frames, split_rejected, threshold_frames

    def unit(df):  # the router's number: a second key column, an int
        return df.withColumn("unit", F.regexp_extract("router", "[0-9]+", 0).cast("int"))

    frames, _ = split_rejected(threshold_frames(
        stream_of(spark, readings(spark), f"{folder}/in"), "time", "loss_rate > 0.003",
        by="router", min_duration="2 rows", late="1 minute", shards=2))
    filler = unit(flows(spark).select(F.regexp_replace("src", "s", "r").alias("router"),
                                      "time", "bytes"))
    return run_stream(fill_frames(unit(frames), stream_of(spark, filler, f"{folder}/filler"),
                                  "time", by=["router", "unit"], before="20 seconds"), folder)


# --------------------------------------------------------------------------- multi-granular
@case
def multi_granular_batch(spark, folder):
    from windowkit.spark import multi_granular, split_rejected

    out = multi_granular(flows(spark), "time", "RANGES 1 MINUTE, 20 SECONDS "
                         "SLIDES 20 SECONDS, 10 SECONDS", by="src", value="bytes",
                         aggregates=["count", "sum", "mean", "max"], distinct="dst")
    reports, rejected = split_rejected(out)
    return pd.concat([reports.toPandas(), rejected.toPandas()])


@case
def multi_granular_stream(spark, folder):
    from windowkit.spark import multi_granular

    stream = stream_of(spark, flows(spark), f"{folder}/in")
    return run_stream(multi_granular(stream, "time", "RANGES 1 MINUTE, 20 SECONDS "
                                     "SLIDES 20 SECONDS, 10 SECONDS", by="src", value="bytes",
                                     aggregates=["count", "sum"], shards=2), folder)


@case
def recurring_batch(spark, folder):
    from windowkit.spark import recurring_items

    return recurring_items(flows(spark), "time", "dst", "RANGES 1 MINUTE, 20 SECONDS "
                           "SLIDES 20 SECONDS, 10 SECONDS", by="src").toPandas()


# -------------------------------------------------------------------------------- widening
@case
def widen_batch(spark, folder):
    from windowkit.spark import split_rejected, widen_detect

    found, rejected = split_rejected(widen_detect(
        syscalls(spark), "time", by="pid", base="4 seconds", max_length=8,
        max_duration="10 minutes"))
    return pd.concat([found.toPandas(), rejected.toPandas()])


@case
def widen_stream(spark, folder):
    from windowkit.spark import widen_detect

    stream = stream_of(spark, syscalls(spark), f"{folder}/in", parts=3)
    return run_stream(widen_detect(stream, "time", by="pid", base="4 seconds", max_length=8,
                                   max_duration="10 minutes", late="1 minute"), folder)


# ------------------------------------------------------------------------------------ keys
def _sites(spark):
    """The readings with a composite key: a site (text) and a router number (int)."""
    from pyspark.sql import functions as F

    return readings(spark).select(
        F.when(F.col("router").isNotNull(), F.concat(F.lit("site-"), F.substring("router", 2, 1)
                                                     )).alias("site"),
        F.expr("CAST(substring(router, 2, 1) AS INT) % 2").alias("unit"), "time", "loss_rate")


@case
def keys_batch(spark, folder):
    from pyspark.sql import functions as F

    from windowkit.spark import multi_granular, threshold_frames

    sites = _sites(spark)
    frames = threshold_frames(sites, "time", "loss_rate > 0.003", by=["site", F.col("unit")],
                              min_duration="2 rows").toPandas()
    levels = multi_granular(sites, "time", "RANGES 1 MINUTE SLIDES 20 SECONDS",
                            by=F.upper("site"), aggregates=["count"]).toPandas()
    return pd.concat([frames, levels])


@case
def keys_stream(spark, folder):
    from windowkit.spark import threshold_frames

    stream = stream_of(spark, _sites(spark), f"{folder}/in")
    return run_stream(threshold_frames(stream, "time", "loss_rate > 0.003", by=["site", "unit"],
                                       late="1 minute", shards=2), folder)


# ------------------------------------------------------------------------------- Count-Min
@case
def count_min_batch(spark, folder):
    from windowkit.spark import (
        estimate_frequency,
        heavy_hitters,
        merge_count_min,
        windowed_count_min,
    )

    df = flows(spark)
    parts = []
    for algorithm in ("proportional", "simple", "splitter", "perfect"):
        snaps = windowed_count_min(df, "dst", "time", window=30, unit="ticks",
                                   tick="10 seconds", algorithm=algorithm, epsilon=0.05,
                                   shards=2)
        merged = merge_count_min(snaps)
        items = df.select("dst").distinct()
        parts += [
            estimate_frequency(merged, items, "dst").toPandas().assign(part=algorithm),
            heavy_hitters(snaps, items, phi=0.1, item="dst", latest=True).toPandas().assign(
                part=f"{algorithm} heavy"),
        ]
    return pd.concat(parts)


@case
def count_min_stream(spark, folder):
    from windowkit.spark import windowed_count_min

    stream = stream_of(spark, flows(spark), f"{folder}/in")
    return run_stream(windowed_count_min(stream, "dst", "time", window=6, unit="ticks",
                                         tick="10 seconds", epsilon=0.05, algorithm="splitter",
                                         shards=2, snapshot_every=50), folder)


@case
def count_min_ties_batch(spark, folder):
    """Five rows at each instant, repartitioned as each kind of session reads them; a periodic
    snapshot cuts through an instant's rows, which a site takes in an order of their contents,
    so the snapshots are the same bytes."""
    from windowkit.spark import windowed_count_min

    rng = np.random.default_rng(13)
    rows = [(f"d{int(rng.integers(0, 9))}", T0 + 10 * (i // 5) * SECOND) for i in range(200)]
    df = spark.createDataFrame(rows, "dst string, time timestamp").repartition(3)
    return windowed_count_min(df, "dst", "time", window=6, unit="ticks", tick="10 seconds",
                              epsilon=0.05, algorithm="splitter", shards=2,
                              snapshot_every=3).toPandas()


# ------------------------------------------------------------------------ persistent items
@case
def persistent_batch(spark, folder):
    from windowkit.spark import exact_persistent_items, persistent_items, split_rejected

    df = flows(spark)
    reported, rejected = split_rejected(persistent_items(
        df, "dst", "time", slot="20 seconds", window_slots=6, alpha=0.5, shards=2))
    exact = exact_persistent_items(df, "dst", "time", slot="20 seconds", window_slots=6,
                                   alpha=0.5)
    return pd.concat([reported.toPandas().assign(part="sketch"),
                      rejected.toPandas().assign(part="rejected"),
                      exact.toPandas().assign(part="exact")])


@case
def persistent_column_item_batch(spark, folder):
    """An item and a time given as expressions: the item column named as Spark names it."""
    from pyspark.sql import functions as F

    from windowkit.spark import exact_persistent_items, persistent_items

    df = flows(spark)
    time = F.col("time") + F.expr("INTERVAL 0 SECONDS")
    sketch = persistent_items(df, F.upper("dst"), time, slot="20 seconds", window_slots=6,
                              alpha=0.5, shards=2)
    exact = exact_persistent_items(df, F.upper("dst"), time, slot="20 seconds",
                                   window_slots=6, alpha=0.5)
    return pd.concat([sketch.toPandas().assign(part="sketch"),
                      exact.toPandas().assign(part="exact")])


@case
def persistent_stream(spark, folder):
    from windowkit.spark import persistent_items

    stream = stream_of(spark, flows(spark), f"{folder}/in")
    return run_stream(persistent_items(stream, "dst", "time", slot="20 seconds",
                                       window_slots=6, alpha=0.5, shards=2), folder)


# ---------------------------------------------------------------------------- bad input
@case
def error_unknown_column(spark, folder):
    from windowkit.spark import threshold_frames

    return threshold_frames(readings(spark), "time", "loss > 0.003", by="router").toPandas()


@case
def error_bad_window(spark, folder):
    from windowkit.spark import multi_granular

    return multi_granular(flows(spark), "time", "RANGES 1 MINUTE SLIDES 7 SECONDS").toPandas()


@case
def error_integer_time_without_unit(spark, folder):
    from windowkit.spark import persistent_items

    df = spark.createDataFrame([("a", 1)], "item string, t long")
    return persistent_items(df, "item", "t").toPandas()


@case
def error_fill_key_one_side_lacks(spark, folder):
    from windowkit.spark import fill_frames

    frames, filler = site_frames(spark)
    return fill_frames(frames.drop("router"), filler, "t", by=["site", "router"]).toPandas()


@case
def error_count_min_site_typo(spark, folder):
    from windowkit.spark import windowed_count_min

    return windowed_count_min(flows(spark), "dst", "time", window=5, by=["src", "sorc"]
                              ).toPandas()


# ------------------------------------------------------------------------------------ SQL
#: Each SQL table function's call over the view ``readings`` (``readings()``), and the
#: DataFrame function's call it stands for (issue #37).
SQL_CALLS = {
    "threshold_frames": ("when => 'loss_rate > 0.003', min_duration => '2 rows', "
                         "schedule => '10 seconds'",
                         {"when": "loss_rate > 0.003", "min_duration": "2 rows",
                          "schedule": "10 seconds"}),
    "boundary_frames": ("value => 'loss_rate', x => 0.002, min_duration => '2 rows'",
                        {"value": "loss_rate", "x": 0.002, "min_duration": "2 rows"}),
    "delta_frames": ("value => 'loss_rate', x => 0.003, extent => 'liberal'",
                     {"value": "loss_rate", "x": 0.003, "extent": "liberal"}),
    "aggregate_frames": ("value => 'loss_rate', func => 'sum', op => '>', x => 0.01",
                         {"value": "loss_rate", "func": "sum", "op": ">", "x": 0.01}),
}


def sql_call(function: str, arguments: str, by: str = "by => 'router'") -> str:
    """A SQL call of ``windowkit_<function>`` over the view ``readings``."""
    return (f"SELECT * FROM windowkit_{function}(TABLE(readings), time => 'time', {by}, "
            f"{arguments})")


@case
def sql_frames_batch(spark, folder):
    from windowkit.spark import register_sql

    register_sql(spark)
    readings(spark).createOrReplaceTempView("readings")
    return pd.concat([spark.sql(sql_call(name, arguments)).toPandas().assign(function=name)
                      for name, (arguments, _) in SQL_CALLS.items()])


@case
def error_sql_bad_duration(spark, folder):
    from windowkit.spark import register_sql

    register_sql(spark)
    readings(spark).createOrReplaceTempView("readings")
    return spark.sql(sql_call("threshold_frames", "when => 'loss_rate > 0.003', "
                              "min_duration => '3 apples'")).toPandas()


# ------------------------------------------------------------------------------ pipelines
#: A pipeline of sql steps: a windowkit table function on a source, a query of its output
#: (a step name SQL must quote), each step's rows and rejected rows written (issue #37).
SQL_PIPELINE = """\
[pipeline]
output = "out"
report = ""
[sources.readings]
path = "in"
time = "time"
key = "router"
[steps.loss-frames]
sql = \"\"\"SELECT * FROM windowkit_threshold_frames(TABLE(readings), time => 'time',
         by => 'router', when => 'loss_rate > 0.003', min_duration => '2 rows')\"\"\"
[steps.long]
sql = "SELECT router, start, `end` FROM `loss-frames` WHERE `end` - start > INTERVAL 30 SECONDS"
"""


@case
def pipeline_sql_batch(spark, folder):
    import io

    from windowkit.cli.common import Progress
    from windowkit.pipeline.runner import PipelineRun, check_pipeline_inputs
    from windowkit.pipeline.spec import load_pipeline

    os.makedirs(folder, exist_ok=True)
    readings(spark).write.parquet(f"{folder}/in")
    with open(f"{folder}/p.toml", "w") as handle:
        handle.write(SQL_PIPELINE)
    pipeline = load_pipeline(f"{folder}/p.toml")
    PipelineRun(spark, pipeline, check_pipeline_inputs(pipeline),
                progress=Progress(stream=io.StringIO())).run()
    return pd.concat([pd.read_parquet(f"{folder}/out/{name}").assign(step=name)
                      for name in ("loss-frames", "long", "rejected")])


# ------------------------------------------------------------------- SQL table functions
#: The multi-granular SQL calls over the view ``flows`` (``sql_flows()``), and the DataFrame
#: functions' calls they stand for (issue #37).
SQL_REPORT_CALLS = {
    "multi_granular": (
        "SELECT * FROM windowkit_multi_granular(TABLE(flows), time => 'time', by => 'src', "
        "window => 'RANGES 2 MINUTES, 1 MINUTE SLIDES 1 MINUTE, 30 SECONDS', "
        "value => 'bytes', aggregates => array('count', 'sum', 'mean', 'max'), "
        "distinct => 'dst')",
        {"time": "time", "by": "src", "value": "bytes", "distinct": "dst",
         "window": "RANGES 2 MINUTES, 1 MINUTE SLIDES 1 MINUTE, 30 SECONDS",
         "aggregates": ["count", "sum", "mean", "max"]}),
    "recurring_items": (
        "SELECT * FROM windowkit_recurring_items(TABLE(flows), time => 'time', item => 'dst', "
        "levels => array(array('30 seconds', '30 seconds'), array('2 minutes', '1 minute')), "
        "by => array('src', 'bucket'))",
        {"time": "time", "item": "dst", "by": ["src", "bucket"],
         "levels": [("30 seconds", "30 seconds"), ("2 minutes", "1 minute")]}),
}


#: The persistent-items SQL calls over the view ``flows`` (the item typed, and text; sliding and
#: fixed windows, routed by the item into shards), and the DataFrame calls (issue #37).
#: Parameters the sketch takes beyond the exact count's, in SQL and in Python.
_SKETCH_ONLY = {"persistent_items": ("epsilon => 0.25, shards => 3, ",
                                     {"epsilon": 0.25, "shards": 3}),
                "exact_persistent_items": ("", {})}
SQL_PERSISTENT_CALLS = {
    f"{function}_{item}": (
        f"SELECT * FROM windowkit_{function}(TABLE(flows), item => '{item}', "
        f"time => 'time', slot => '20 seconds', window_slots => 4, alpha => 0.5, "
        f"{_SKETCH_ONLY[function][0]}sliding => {str(sliding).lower()})",
        {"item": item, "time": "time", "slot": "20 seconds", "window_slots": 4, "alpha": 0.5,
         **_SKETCH_ONLY[function][1], "sliding": sliding})
    for function in _SKETCH_ONLY
    for item, sliding in [("bucket", True), ("dst", False)]}


#: The windowed Count-Min SQL calls over the view ``flows``, and the DataFrame calls (issue
#: #37): positions from a sequence number (``seq``), from the rank of a time (a timestamp, or
#: an integer with ``time_unit``), or ticks; sites round robin or by a hash.
_COUNT_MIN_CALLS = {
    "sequence_perfect": {"time": "seq", "window": 40, "algorithm": "perfect", "shards": 3},
    "rank_splitter": {"time": "time", "window": 50, "algorithm": "splitter",
                      "snapshot_every": 30},
    "ticks_simple_by_src": {"time": "time", "window": 6, "unit": "ticks",
                            "tick": "20 seconds", "algorithm": "simple", "by": "src"},
    "ticks_proportional": {"time": "time", "window": 9, "unit": "ticks",
                           "tick": "10 seconds", "algorithm": "proportional", "shards": 2},
    "rank_proportional_by_key": {"time": "seq", "time_unit": "s", "window": 70,
                                 "algorithm": "proportional", "by": ["src", "bucket"]},
}


def _sql_argument(value) -> str:
    if isinstance(value, list):
        return f"array({', '.join(_sql_argument(v) for v in value)})"
    return f"'{value}'" if isinstance(value, str) else str(value)


SQL_COUNT_MIN_CALLS = {
    name: ("SELECT * FROM windowkit_windowed_count_min(TABLE(flows), item => 'dst', "
           + ", ".join(f"{k} => {_sql_argument(v)}" for k, v in params.items()) + ")",
           {"item": "dst", **params})
    for name, params in _COUNT_MIN_CALLS.items()}


#: The widening SQL call over the view ``calls`` (``sql_calls()``), and the DataFrame call.
SQL_WIDENING_CALL = (
    "SELECT * FROM windowkit_widen_detect(TABLE(calls), time => 'time', by => 'pid', "
    "base => '4 seconds', max_length => 16, max_duration => '20 minutes')",
    {"time": "time", "by": "pid", "base": "4 seconds", "max_length": 16,
     "max_duration": "20 minutes"})


def sql_calls(spark):
    """:func:`syscalls` with a row of no time and one of no process, as the view ``calls``."""
    df = syscalls(spark)
    bad = spark.createDataFrame([(7, None, "dup", "4", None, "0"),
                                 (None, T0, "dup", "4", None, "0")], df.schema)
    df = df.unionByName(bad)
    df.createOrReplaceTempView("calls")
    return df


def sql_flows(spark):
    """Tiny flows with a typed key column (``bucket``), a sequence number (``seq``), a row of
    no time, one of no source and one whose bytes are not a number, as the view ``flows``."""
    from pyspark.sql import functions as F

    df = flows(spark, n=90).withColumn("bytes", F.col("bytes").cast("string"))
    bad = spark.createDataFrame([("s1", "d1", None, "5"), (None, "d1", T0, "5"),
                                 ("s2", None, T0, "n/a")],
                                "src string, dst string, time timestamp, bytes string")
    df = df.unionByName(bad).withColumns({"bucket": F.hash("dst") % 2,
                                           "seq": F.unix_seconds("time") - 1704067000})
    df.createOrReplaceTempView("flows")
    return df


@case
def sql_reports_batch(spark, folder):
    """The multi-granular, persistent-items, Count-Min and widening SQL calls' rows, each
    checked equal to the DataFrame function's."""
    import windowkit.spark as W
    from windowkit.spark import register_sql

    register_sql(spark)
    df = sql_flows(spark)
    found = []
    # (Proportional's fractions are summed in another order by the DataFrame function: its
    # SQL calls are compared cell by cell, up to rounding, in test_spark_sql_countmin.py)
    count_min = {name: call for name, call in SQL_COUNT_MIN_CALLS.items()
                 if call[1]["algorithm"] != "proportional"}
    calls = {**SQL_REPORT_CALLS, **SQL_PERSISTENT_CALLS, **count_min}
    for name, (query, params) in calls.items():
        function = (name if name in SQL_REPORT_CALLS else "windowed_count_min"
                    if name in count_min else name.rsplit("_", 1)[0])
        sql, frame = spark.sql(query), getattr(W, function)(df, **params)
        assert sql.schema == frame.schema, (sql.schema, frame.schema)
        rows = sql.toPandas()
        expected = frame.toPandas()
        pd.testing.assert_frame_equal(sorted_rows(rows), sorted_rows(expected))
        found.append(as_text(sorted_rows(rows)).assign(function=name))
    # heavy hitters in SQL over a SQL call's snapshots, against the DataFrame functions'
    query, params = count_min["sequence_perfect"]
    rows = spark.sql(f"SELECT * FROM windowkit_heavy_hitters(TABLE({query}), candidates => "
                     "array('d0', 'd1', 'd2'), phi => 0.05, item => 'dst')").toPandas()
    snapshots = W.windowed_count_min(df, **params)
    expected = W.heavy_hitters(snapshots, ["d0", "d1", "d2"], 0.05, "dst").toPandas()
    assert len(expected) > 0
    pd.testing.assert_frame_equal(sorted_rows(rows), sorted_rows(expected))
    found.append(as_text(sorted_rows(rows)).assign(function="heavy_hitters"))
    query, params = SQL_WIDENING_CALL
    df = sql_calls(spark)
    sql, frame = spark.sql(query), W.widen_detect(df, **params)
    assert sql.schema == frame.schema, (sql.schema, frame.schema)
    rows = sorted_rows(sql.toPandas())
    pd.testing.assert_frame_equal(rows, sorted_rows(frame.toPandas()))
    found.append(rows.astype(str).assign(function="widen_detect"))
    return pd.concat(found, ignore_index=True)


def sorted_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` in an order of their values alone."""
    rows = rows.reset_index(drop=True)
    order = as_text(rows).sort_values(list(rows.columns), kind="stable").index
    return rows.loc[order].reset_index(drop=True)


def as_text(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows``' values as text (bytes, such as a sketch's, as hex)."""
    return rows.map(lambda v: v.hex() if isinstance(v, bytes | bytearray) else v).astype(str)


def run_case(name: str, spark, folder: str) -> pd.DataFrame:
    """The case's rows, or its error as one row (class and first line of the message)."""
    try:
        rows = CASES[name](spark, folder)
        rows.attrs.clear()  # a Connect session's plan metrics: not data, and not JSON
        return rows
    except Exception as error:  # the error itself is the result to compare
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return pd.DataFrame({"error": [f"{type(error).__name__}: {first}"]})


def main(target: str, out: str, names: list[str]) -> None:
    from windowkit.spark import windowkit_session

    # a local master is a classic session; an sc:// URL, a Connect one
    classic = target.startswith("local")
    spark = windowkit_session(master=target) if classic else windowkit_session(remote=target)
    for name in names or list(CASES):
        folder = os.path.join(out, f"{name}.work")
        rows = run_case(name, spark, folder)
        rows.to_parquet(os.path.join(out, f"{name}.parquet"))
        print(name, len(rows), rows.columns[0], rows.iloc[0, 0] if len(rows) else "", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
