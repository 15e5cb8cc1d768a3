"""Multi-granular windows: the paper's experiments on the core, and Spark against its peers.

Core (Patroumpas & Sellis, section V, Figs. 5-8), one time unit = 1 second, LBL-like connection
records from ``windowkit.datasets.connections`` at ``r`` tuples per time unit: aggregation
(SUM on duration, with count/mean/min/max), regression (on duration) and recurring items (on
protocol), each timed per tuple and per time unit over a stream of ``--units`` time units:

* Fig. 5: cost against the stream rate r = 10K..100K tuples per unit, 5 levels, widest 40 units,
  also for distinct destinations per level (beyond the paper: HLL sketches per granule merged
  along the chain, ``distinct=True``);
* Fig. 6: cost against the number of levels n = 2..10, widest range fixed at 40 units;
* Fig. 7: cost against the granules per level u, 5 levels (ranges u, 2u, 4u, 8u, 16u);
* Fig. 8: state bytes (``to_bytes``) against levels, including 5 and 10 recurring items.

Spark (``--spark``): batch, ``--rows`` rows over 1,000 keys, 5 levels, count/sum/mean/min/max:
``multi_granular`` against (a) five separate ``window()`` aggregations and (b) the expert SQL
(panes per finest granule, then a range window per level); all three are checked to give the
same rows. Each path has ``--warmup`` untimed runs (round robin), then their timed runs
interleave (median of ``--spark-runs``); the untimed runs' seconds are kept too (the first
is the cold one). The SQL table function ``windowkit_multi_granular`` against
``multi_granular`` on the first ``--sql-function-rows`` rows (Spark feeds a table function
row by row), checked to give the same rows. Then Structured Streaming rows/s over 10 files:
the median of ``--stream-runs`` queries, each end to end.

    .venv/bin/python bench/multigranular.py                 # core, paper's experiments
    .venv/bin/python bench/multigranular.py --quick         # smaller, for a smoke run
    .venv/bin/python bench/multigranular.py --spark --rows 1e7
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

from windowkit.core.multigranular import MultiGranularAggregator, RecurringItems
from windowkit.datasets.connections import connection_records
from windowkit.testing.stream_timing import describe_runs, summarize_runs, time_stream

UNIT = 1_000_000  # one time unit of the paper = 1 second
RESULTS = os.path.join(os.path.dirname(__file__), "results", "multigranular.json")
PAPER_LEVELS = [(8, 1), (16, 2), (24, 4), (32, 8), (40, 8)]  # 5 levels, widest 40 units


def levels_us(levels: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return [(w * UNIT, b * UNIT) for w, b in levels]


def stream(rate: int, units: int, seed: int = 0) -> pd.DataFrame:
    df = connection_records(duration=units, rate=rate, n_sources=1000, bursts=2,
                            recurring_every=(2.0, 10.0), start=0, seed=seed)
    df["key"] = pd.Categorical.from_codes(np.zeros(len(df), dtype=np.int64), ["all"])
    return df


def run_operation(op_name: str, levels: list[tuple[int, int]], df: pd.DataFrame,
                  items: int | None = None) -> tuple[float, int]:
    """Seconds to process ``df`` (one batch per time unit, as a stream) and the state bytes
    at the end."""
    if op_name == "recurring":
        op = RecurringItems(levels=levels_us(levels))
        frame = df[["key", "time"]].assign(
            item=(df["destination"] % items).astype(str) if items else df["protocol"])
    elif op_name == "distinct":
        op = MultiGranularAggregator(levels=levels_us(levels), aggregates=("count",),
                                     distinct=True)
        frame = df[["key", "time"]].assign(value=0.0, item=df["destination"].astype(str))
    else:
        op = MultiGranularAggregator(levels=levels_us(levels), regression=op_name == "regression",
                                     aggregates=("count", "sum", "mean", "min", "max"))
        frame = df[["key", "time"]].assign(value=df["duration"])
    cuts = np.searchsorted(frame["time"].to_numpy(), np.arange(0, frame["time"].iloc[-1] + UNIT,
                                                               UNIT))
    pieces = [frame.iloc[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True) if b > a]
    start = time.perf_counter()
    for piece in pieces:
        op.process(piece)
    op.finish()
    elapsed = time.perf_counter() - start
    return elapsed, len(op.to_bytes())


def measure(op_name: str, levels, df, repeats: int, items: int | None = None) -> dict:
    times, size = [], 0
    for _ in range(repeats):
        elapsed, size = run_operation(op_name, levels, df, items)
        times.append(elapsed)
    best = min(times)
    units = int(np.ceil(df["time"].iloc[-1] / UNIT))
    return {"operation": op_name, "rows": len(df), "seconds": best,
            "ns_per_tuple": 1e9 * best / len(df), "ms_per_unit": 1e3 * best / units,
            "tuples_per_s": len(df) / best, "state_bytes": size}


def core_experiments(units: int, repeats: int, rates: list[int]) -> dict:
    ops = ("aggregation", "regression", "recurring")
    out: dict[str, list] = {"fig5_rate": [], "fig6_levels": [], "fig7_granules": [],
                            "fig8_memory": []}
    run_operation("aggregation", PAPER_LEVELS, stream(1000, 3))  # compile the kernels once
    for rate in rates:
        df = stream(rate, units)
        for op in (*ops, "distinct"):
            out["fig5_rate"].append({"rate": rate, **measure(op, PAPER_LEVELS, df, repeats)})
    top = max(rates)
    df = stream(top, units)
    for n in (2, 3, 4, 5, 10):
        levels = [(round(40 * (k + 1) / n), 1) for k in range(n)]
        for op in ops:
            out["fig6_levels"].append({"levels": n, "rate": top,
                                       **measure(op, levels, df, repeats)})
    fig7_rate = min(top, 10_000)  # the widest range grows to 16 u units: keep rows bounded
    for u in (2, 5, 10, 20):
        levels = [(u * 2**k, 2**k) for k in range(5)]
        udf = stream(fig7_rate, max(units, 2 * u * 16))
        for op in ops:
            out["fig7_granules"].append({"granules": u, "rate": fig7_rate,
                                         **measure(op, levels, udf, 1)})
    for n in (3, 4, 5, 10):
        levels = [(round(40 * (k + 1) / n), 1) for k in range(n)]
        for op, items in (("aggregation", None), ("regression", None), ("recurring", 5),
                          ("recurring", 10)):
            _, size = run_operation(op, levels, df.iloc[: len(df) // 2], items)
            out["fig8_memory"].append({"levels": n, "operation": op, "items": items,
                                       "state_bytes": size})
    return out


def print_core(results: dict) -> None:
    print("\nFig. 5: cost against stream rate (5 levels, widest 40 units)")
    print(f"{'rate/unit':>10} {'operation':>12} {'ns/tuple':>9} {'ms/unit':>8} {'M tuples/s':>11}")
    for r in results["fig5_rate"]:
        print(f"{r['rate']:>10} {r['operation']:>12} {r['ns_per_tuple']:>9.1f} "
              f"{r['ms_per_unit']:>8.2f} {r['tuples_per_s'] / 1e6:>11.2f}")
    print("\nFig. 6: cost against levels (widest 40 units)")
    print(f"{'levels':>6} {'operation':>12} {'ns/tuple':>9} {'ms/unit':>8}")
    for r in results["fig6_levels"]:
        print(f"{r['levels']:>6} {r['operation']:>12} {r['ns_per_tuple']:>9.1f} "
              f"{r['ms_per_unit']:>8.2f}")
    by = {(r["levels"], r["operation"]): r["ns_per_tuple"] for r in results["fig6_levels"]}
    for op in ("aggregation", "regression", "recurring"):
        print(f"  {op}: cost with 10 levels / 2 levels = {by[(10, op)] / by[(2, op)]:.2f}")
    print("\nFig. 7: cost against granules per level (5 levels)")
    print(f"{'u':>4} {'operation':>12} {'ns/tuple':>9} {'ms/unit':>8}")
    for r in results["fig7_granules"]:
        print(f"{r['granules']:>4} {r['operation']:>12} {r['ns_per_tuple']:>9.1f} "
              f"{r['ms_per_unit']:>8.2f}")
    print("\nFig. 8: state bytes against levels")
    print(f"{'levels':>6} {'operation':>12} {'items':>6} {'bytes':>9}")
    for r in results["fig8_memory"]:
        print(f"{r['levels']:>6} {r['operation']:>12} {r['items'] or '':>6} "
              f"{r['state_bytes']:>9}")


# ---------------------------------------------------------------------- Spark
SPARK_WINDOW = ("RANGES 1 HOUR, 30 MINUTES, 10 MINUTES, 5 MINUTES, 1 MINUTE "
                "SLIDES 10 MINUTES, 5 MINUTES, 1 MINUTE, 1 MINUTE, 10 SECONDS")
SPARK_LEVELS = [(60, 10), (300, 60), (600, 60), (1800, 300), (3600, 600)]  # seconds
AGGS = ["count", "sum", "mean", "min", "max"]
CANON = ["source", "level", "window_start", "window_end", "count", "sum", "mean", "min", "max"]


def spark_data(rows: int, workdir: str, n_files: int = 10) -> tuple[str, str]:
    """``rows`` connection records over 1,000 sources and two hours, as one parquet table and
    as ``n_files`` files in time order (the streaming source)."""
    span = 7200.0
    df = connection_records(duration=span, rate=rows / span, n_sources=1000, bursts=3,
                            recurring_every=(30.0, 300.0), seed=7)
    # the bursts add rows on top of the background rate (2.25 times as many for this seed):
    # keep exactly `rows` of them, drawn evenly so the bursts keep their shape
    if len(df) > rows:
        keep = np.random.default_rng(7).choice(len(df), rows, replace=False)
        df = df.iloc[np.sort(keep)].reset_index(drop=True)
    df["t"] = pd.to_datetime(df["time"], unit="us", utc=True).astype("datetime64[us, UTC]")
    table = os.path.join(workdir, "records")
    files = os.path.join(workdir, "stream")
    os.makedirs(files)
    df = df[["t", "source", "destination", "protocol", "duration", "bytes"]]
    df.to_parquet(table, index=False)
    for i, rows in enumerate(np.array_split(np.arange(len(df)), n_files)):
        part = df.iloc[rows]
        part.to_parquet(os.path.join(files, f"part{i:02d}.parquet"), index=False)
    return table, files


def separate_windows(df):
    """(a) one ``window()`` aggregation per level, as a user would write them, unioned: the
    windows ``[start, start + w)`` with ``start`` on whole slides, ``multi_granular``'s own."""
    from pyspark.sql import functions as F

    parts = []
    for k, (w, b) in enumerate(SPARK_LEVELS):
        win = F.window("t", f"{w} seconds", f"{b} seconds")
        parts.append(df.groupBy("source", win.alias("w")).agg(
            F.count(F.lit(1)).alias("count"), F.sum("duration").alias("sum"),
            F.avg("duration").alias("mean"), F.min("duration").alias("min"),
            F.max("duration").alias("max"))
            .select("source", F.lit(k).alias("level"), F.col("w.start").alias("window_start"),
                    F.col("w.end").alias("window_end"), "count", "sum", "mean", "min", "max"))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def expert_sql(spark, table: str):
    """(b) panes per finest granule (10 s, ``[p b0, (p + 1) b0)``), then each pane expanded
    into the windows of each level that hold it, merged per window ("No pane, no gain")."""
    spark.read.parquet(table).createOrReplaceTempView("records")
    b0 = SPARK_LEVELS[0][1] * 1_000_000
    spark.sql(f"""
        SELECT source, floor(unix_micros(t) / {b0}) AS pane, count(*) AS n,
               sum(duration) AS s, min(duration) AS lo, max(duration) AS hi
        FROM records GROUP BY source, floor(unix_micros(t) / {b0})
    """).createOrReplaceTempView("panes")
    selects = []
    for k, (w, b) in enumerate(SPARK_LEVELS):
        r, n = b * 1_000_000 // b0, w * 1_000_000 // b0
        # pane p lies in the windows [G b0 - w, G b0) ending at granules G = p + 1 .. p + n
        # with G a multiple of r
        selects.append(f"""
            SELECT source, {k} AS level, g, sum(n) AS count, sum(s) AS sum,
                   sum(s) / sum(n) AS mean, min(lo) AS min, max(hi) AS max
            FROM (SELECT source, n, s, lo, hi,
                         explode(sequence(((pane + {r}) div {r}) * {r},
                                          pane + {n}, {r})) AS g
                  FROM panes)
            GROUP BY source, g""")
    union = " UNION ALL ".join(selects)
    return spark.sql(f"""
        SELECT source, level, timestamp_micros(g * {b0} - CASE level {
            ' '.join(f'WHEN {k} THEN {w * 1_000_000}' for k, (w, _) in enumerate(SPARK_LEVELS))
        } END) AS window_start, timestamp_micros(g * {b0}) AS window_end,
               count, sum, mean, min, max
        FROM ({union})""")


def differing(ours, theirs) -> int:
    """Rows present on one side only, or whose values differ by more than 1e-9 relatively
    (sums of doubles in another order differ in the last bits; rounding both sides would
    split values that straddle a rounding boundary)."""
    from pyspark.sql import functions as F

    keys = ["source", "level", "window_start", "window_end"]
    a = ours.select(*keys, *[F.col(c).alias(f"a_{c}") for c in CANON[4:]])
    b = theirs.select(*keys, *[F.col(c).alias(f"b_{c}") for c in CANON[4:]])
    joined = a.join(b, keys, "full_outer")
    bad = F.col("a_count").isNull() | F.col("b_count").isNull()
    for c in CANON[4:]:
        x, y = F.col(f"a_{c}").cast("double"), F.col(f"b_{c}").cast("double")
        bad = bad | (F.abs(x - y) > F.lit(1e-9) * F.greatest(F.lit(1.0), F.abs(x)))
    return joined.filter(bad).count()


def spark_benchmarks(rows: int, runs: int, master: str, stream_runs: int = 3,
                     warmup: int = 2, sql_rows: int = 0) -> dict:
    from windowkit.spark import multi_granular, windowkit_session

    # numba compiles a kernel once per installation (its cache is on disk): without this, a
    # fresh checkout would time the compiler inside the first streaming micro-batch (the
    # batch paths have an untimed run); the seconds say whether the cache was cold
    start = time.perf_counter()
    run_operation("aggregation", PAPER_LEVELS, stream(1000, 3))
    kernels = time.perf_counter() - start
    spark = windowkit_session(master, app_name="bench-multigranular", quiet=True)
    workdir = tempfile.mkdtemp(prefix="wk-mg-")
    try:
        table, files = spark_data(rows, workdir)
        df = spark.read.parquet(table)
        paths = {
            "multi_granular": lambda: multi_granular(df, "t", SPARK_WINDOW, by="source",
                                                     value="duration", aggregates=AGGS
                                                     ).drop("range", "slide", "rejected",
                                                            "detail"),
            "separate_window": lambda: separate_windows(df),
            "expert_sql": lambda: expert_sql(spark, table),
        }
        results: dict = {"rows": rows, "window": SPARK_WINDOW, "runs": runs,
                         "warmup_runs": warmup,
                         "kernels_compiled_or_loaded_seconds": kernels}
        # untimed runs of each path first, round robin: the Python workers start once per
        # session, and the JVM's JIT compiles a short job's code over its first few runs
        # (a 2 s job took 2.6, 1.9, 1.8, 1.7, 1.7 s after one untimed run, where a 20 s job
        # is warm within its first run); then the timed runs interleave, so that whichever
        # path ran all its runs first does not pay for the JIT alone
        cold = run_rounds(paths, warmup)
        times = run_rounds(paths, runs)
        for name, seconds in times.items():
            results[name] = {"seconds": statistics.median(seconds), "all": seconds,
                             "untimed": cold[name],
                             "rows_per_s": rows / statistics.median(seconds)}
        ours = paths["multi_granular"]()
        for name in ("separate_window", "expert_sql"):
            diff = differing(ours, paths[name]())
            results[name]["rows_differing_from_multi_granular"] = diff
        results["rows_out"] = ours.count()
        if sql_rows:
            results["sql_function"] = sql_function_timing(spark, table, sql_rows)
        for name in ("separate_window", "expert_sql"):
            results[name]["multi_granular_speedup"] = (
                results[name]["seconds"] / results["multi_granular"]["seconds"])
        # Structured Streaming: 10 files, one per micro-batch, to a noop sink; several
        # queries, each on a checkpoint of its own (the first also starts the session's
        # streaming machinery: see stream_timing)
        records = spark.readStream.schema(df.schema).option("maxFilesPerTrigger", 1).parquet(
            files)
        out = multi_granular(records, "t", SPARK_WINDOW, by="source", value="duration",
                             aggregates=AGGS, late="1 minute")
        timings = [time_stream(noop_sink(out, os.path.join(workdir, f"ck{run}")))
                   for run in range(stream_runs)]
        results["streaming"] = {"files": 10, **summarize_runs(timings, rows)}
        # the floor of this path: the same query with a processor that reads its rows and
        # emits nothing (no operator, no state), in a session whose streaming has started
        floor = time_stream(noop_sink(read_only_query(records),
                                      os.path.join(workdir, "ck_floor"))).seconds
        results["streaming"]["read_only_processor"] = {"seconds": floor,
                                                       "rows_per_s": rows / floor}
        # Spark's own way on the same files: the five window() aggregations in one query
        # (append mode, the same watermark); a reference for the speed only, since its
        # windows are emitted by other rules than the levels' reports
        try:
            secs = time_stream(noop_sink(separate_windows(records.withWatermark("t", "1 minute")),
                                         os.path.join(workdir, "ck_window"))).seconds
        except Exception as exc:  # noqa: BLE001 - a reference only: keep the results above
            results["streaming"]["separate_window"] = {"error": str(exc).splitlines()[0]}
        else:
            results["streaming"]["separate_window"] = {"seconds": secs,
                                                       "rows_per_s": rows / secs}
        return results
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def sql_function_timing(spark, table: str, rows: int) -> dict:
    """``windowkit_multi_granular`` called from SQL against ``multi_granular`` on the first
    ``rows`` rows of the table (Spark feeds a table function row by row, so the whole table
    would take minutes a run): seconds of each (one untimed run, then one timed), and the rows
    on which they differ."""
    from windowkit.spark import multi_granular, register_sql

    register_sql(spark)
    subset = spark.read.parquet(table).limit(rows).localCheckpoint()
    subset.createOrReplaceTempView("records_subset")
    aggregates = ", ".join(f"'{a}'" for a in AGGS)
    query = f"""
        SELECT {", ".join(CANON)} FROM windowkit_multi_granular(
            TABLE(records_subset), time => 't', window => '{SPARK_WINDOW}', by => 'source',
            value => 'duration', aggregates => array({aggregates}))"""
    paths = {
        "multi_granular": lambda: multi_granular(subset, "t", SPARK_WINDOW, by="source",
                                                 value="duration", aggregates=AGGS
                                                 ).drop("range", "slide", "rejected", "detail"),
        "sql_function": lambda: spark.sql(query),
    }
    run_rounds(paths, 1)
    times = run_rounds(paths, 1)
    return {"rows": rows, "seconds": {name: t[0] for name, t in times.items()},
            "sql_function_vs_multi_granular": times["sql_function"][0]
            / times["multi_granular"][0],
            "rows_differing": differing(paths["multi_granular"](), paths["sql_function"]())}


def run_rounds(paths: dict, rounds: int) -> dict[str, list[float]]:
    """Seconds of each path's run to a noop sink, ``rounds`` times round robin."""
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(rounds):
        for name, build in paths.items():
            start = time.perf_counter()
            build().write.format("noop").mode("overwrite").save()
            times[name].append(time.perf_counter() - start)
    return times


def noop_sink(out, checkpoint: str):
    return out.writeStream.format("noop").option("checkpointLocation", checkpoint)


def read_only_query(stream):
    """``multi_granular`` on ``stream`` with the adapter's processor swapped for one that
    unpacks its rows and emits nothing."""
    import pandas as pd

    from windowkit.spark import adapter, multi_granular

    class ReadOnly(adapter._RunnerProcessor):  # defined here: pickled by value
        def handleInputRows(self, key, rows, timerValues):
            adapter._unpack_rows(rows)
            op = self.factory()
            yield adapter._to_spark_frame(op.empty_output(), pd.DataFrame(), op.output_schema,
                                          0)

    real = adapter._RunnerProcessor
    adapter._RunnerProcessor = ReadOnly
    try:
        return multi_granular(stream, "t", SPARK_WINDOW, by="source", value="duration",
                              aggregates=AGGS, late="1 minute")
    finally:
        adapter._RunnerProcessor = real


def print_spark(res: dict) -> None:
    print(f"\nSpark batch, {res['rows']:,} rows, 1,000 keys, 5 levels ({res['window']})")
    print(f"{'path':>16} {'seconds':>8} {'M rows/s':>9} {'ours vs it':>10} {'diff rows':>9}")
    for name in ("multi_granular", "separate_window", "expert_sql"):
        r = res[name]
        ratio = r.get("multi_granular_speedup")
        print(f"{name:>16} {r['seconds']:>8.2f} {r['rows_per_s'] / 1e6:>9.3f} "
              f"{'' if ratio is None else f'{ratio:.2f}x':>10} "
              f"{r.get('rows_differing_from_multi_granular', ''):>9}")
    if res["multi_granular"].get("untimed"):
        print("untimed warm-up runs (the first is the cold one): " + "; ".join(
            f"{name} " + ", ".join(f"{x:.2f}" for x in res[name]["untimed"])
            for name in ("multi_granular", "separate_window", "expert_sql")))
    if "sql_function" in res:
        q = res["sql_function"]
        print(f"windowkit_multi_granular from SQL on the first {q['rows']:,} rows: "
              f"{q['seconds']['sql_function']:.1f} s against {q['seconds']['multi_granular']:.2f}"
              f" s for multi_granular ({q['sql_function_vs_multi_granular']:.0f}x), "
              f"{q['rows_differing']} rows differing")
    s = res["streaming"]
    print(f"Structured Streaming over {s['files']} files, median of {s['runs']} queries: "
          f"{s['rows_per_s'] / 1e6:.3f} M rows/s end to end ({s['seconds']:.1f} s; numba's "
          f"kernels compiled or loaded from its cache before the runs: "
          f"{res['kernels_compiled_or_loaded_seconds']:.1f} s)")
    print("\n".join(describe_runs(s, "rows")))
    if "read_only_processor" in s:
        print(f"  with a processor that only reads its rows: "
              f"{s['read_only_processor']['rows_per_s'] / 1e6:.3f} M rows/s "
              f"({s['read_only_processor']['seconds']:.1f} s)")
    if "error" in s.get("separate_window", {}):
        print(f"  the five window() aggregations as one streaming query failed: "
              f"{s['separate_window']['error']}")
    elif "separate_window" in s:
        print(f"  the five window() aggregations as one streaming query: "
              f"{s['separate_window']['rows_per_s'] / 1e6:.3f} M rows/s "
              f"({s['separate_window']['seconds']:.1f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--units", type=int, default=60, help="time units per core stream")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small rates, one repeat")
    parser.add_argument("--spark", action="store_true", help="also run the Spark part")
    parser.add_argument("--rows", type=float, default=1e7, help="Spark batch rows")
    parser.add_argument("--skip-core", action="store_true")
    parser.add_argument("--spark-runs", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=2,
                        help="untimed runs of each Spark batch path before the timed ones")
    parser.add_argument("--stream-runs", type=int, default=3,
                        help="streaming queries timed (median reported, and each)")
    parser.add_argument("--sql-function-rows", type=float, default=1e6,
                        help="rows on which windowkit_multi_granular from SQL is timed "
                             "against multi_granular (0: skip it)")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    if args.warmup < 1:
        parser.error(f"--warmup takes at least 1 (got {args.warmup})")
    if args.spark_runs < 1 or args.stream_runs < 1:
        parser.error(f"--spark-runs and --stream-runs take at least 1 (got {args.spark_runs}, "
                     f"{args.stream_runs})")
    results: dict = {"machine": {"python": sys.version.split()[0], "cpus": os.cpu_count(),
                                 "platform": platform.platform()}}
    if os.path.exists(RESULTS):
        with open(RESULTS) as fh:
            results = {**json.load(fh), **results}
    if not args.skip_core:
        rates = [1_000, 5_000] if args.quick else [10_000, 20_000, 50_000, 100_000]
        units = 20 if args.quick else args.units
        repeats = 1 if args.quick else args.repeats
        results["core"] = {"units": units, "repeats": repeats,
                           **core_experiments(units, repeats, rates)}
        print_core(results["core"])
    if args.spark:
        results["spark"] = spark_benchmarks(int(args.rows), args.spark_runs, args.master,
                                            args.stream_runs, args.warmup,
                                            int(args.sql_function_rows))
        print_spark(results["spark"])
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as fh:
        json.dump(results, fh, indent=1)
    print(f"\nwrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
