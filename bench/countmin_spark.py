"""Throughput of the Spark DistCM job against Spark's built-in (non-windowed) countMinSketch.

10 M rows, Zipf(1) over 1 M integer ids, read from Parquet, with a sequence-number column ``t``;
epsilon = 0.001, delta = 1/16 (4 x 2719); windowed variants estimate the last N = 1,000,000
items of the whole stream (one global window, whatever the shards); ``local[2]`` with 2 shards
(= 2 DistCM sites, one per core) and the default snapshot cadence (one snapshot per shard at the
end of the input; issue #16, point 7). Timed: the whole job from the Parquet file to the
coordinator's merged sketch on the driver (``merge_count_min(windowed_count_min(...)).first()``,
one lazy plan run by ``first()``; Splitter's input carries the input's last position, a scalar
subquery; Simple and Proportional run in the adapter's mergeable mode: each site's rows are
counted in the JVM, then Spark's own ``count_min_sketch`` sketches the rows of the last one or
two window blocks per (site, block) in the JVM (windowkit's Spark sketches hash with Spark's
Count-Min family, so the matrices are the core's), with no shuffle of rows and no row reaching
Python, and the Parquet scan skips the row groups before those blocks (it gets the filter);
the "rows not in time order" row times the same job on the same rows shuffled).
Two last rows time floors. "rows shuffled to sites": any path that keeps each site's rows in
order (Splitter's) ships every row to its site's task (the same round robin routing, one task
per site) and into Python, where they are only counted. "every row's site counted in the
JVM": the aggregation the mergeable variants start with (each site's rows and the last step,
the site being every row's position modulo the shards), before only the rows of the last
windows are sketched. The two "proportional's passes in SQL" rows are the same two passes
written in Spark SQL with nothing of windowkit's (the summary, then ``count_min_sketch`` per site
and block of the last blocks, collected; no merge): as two actions with the first position a
literal (the shape of an eager function), and as one plan with the summary a scalar subquery
(the shape of a lazy one, which windowkit's functions are: no Spark job before the caller's
action). Their difference is what Spark itself charges for the lazy shape. The last floor runs
the lazy plan's parts through the two Python steps a lazy job has after them, as stubs: one task
that finishes the shards (it passes the parts on) and the coordinator's merge (a Python UDF
over the collected parts, which joins their bytes); an eager function ran both on the driver.
The peer is Spark's ``count_min_sketch(item, eps, confidence, seed)`` aggregate (the SQL face of
``DataFrameStatFunctions.countMinSketch``) on the same DataFrame, JVM sketches per partition
merged by the aggregation, no window; Spark sizes it ``ceil(2 / eps)`` wide, 2000 columns, so it
does a little less work than a 2719-column sketch. The JVM keeps compiling hot code across runs
(Spark's sketch sped up from about 1 s to 0.5 s over ten runs in one session), so every job gets
a warm-up run and the runs interleave. Median of ``--runs`` runs; target (issue #16):
DistCM at least 0.5x Spark's rows/s.

    .venv/bin/python bench/countmin_spark.py [--rows 10000000] [--runs 5] [--output DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from windowkit.datasets.countmin_streams import zipf_ids
from windowkit.spark.adapter import spread_group_ids

EPSILON, DELTA, WINDOW, SHARDS = 0.001, 1 / 16, 1_000_000, 2
SHUFFLED = "DistCM proportional, rows not in time order"
FLOOR = "floor: rows shuffled to sites, no sketch"
SITES_FLOOR = "floor: every row's site counted in the JVM"
EAGER_FLOOR = "floor: proportional's passes in SQL, 2 actions"
LAZY_FLOOR = "floor: proportional's passes in SQL, 1 lazy plan"
PYTHON_FLOOR = "floor: lazy plan + Python finish and merge stubs"
RESULTS = Path(__file__).resolve().parent / "results"


def write_input(rows: int, folder: str, shuffled: bool = False) -> str:
    """The rows in time order (row groups of 1 M consecutive positions), or the same rows
    ``shuffled`` (every row group then spans the whole stream)."""
    items = zipf_ids(rows, 1_000_000, alpha=1.0, seed=42)
    pdf = pd.DataFrame({"item": items.astype("int64"), "t": pd.RangeIndex(rows).to_numpy()})
    if shuffled:
        pdf = pdf.sample(frac=1.0, random_state=3)
    path = os.path.join(folder, "zipf_shuffled.parquet" if shuffled else "zipf.parquet")
    pdf.to_parquet(path, index=False, row_group_size=1_000_000)
    return path


def time_distcm(spark, path: str, algorithm: str, snapshot_every: int | None) -> float:
    from windowkit.spark.countmin import merge_count_min, windowed_count_min

    df = spark.read.parquet(path)
    start = time.perf_counter()
    snaps = windowed_count_min(df, "item", "t", window=WINDOW, algorithm=algorithm,
                               epsilon=EPSILON, delta=DELTA, shards=SHARDS,
                               snapshot_every=snapshot_every)
    merged = merge_count_min(snaps).first()
    elapsed = time.perf_counter() - start
    assert merged["n_seen"] == df.count()
    # one global window of N items (Splitter approximates its count)
    assert abs(merged["window_count"] - min(WINDOW, df.count())) <= 0.05 * WINDOW
    return elapsed


def time_spark_cms(spark, path: str) -> float:
    from pyspark.sql import functions as F

    df = spark.read.parquet(path)
    start = time.perf_counter()
    sketch = F.count_min_sketch("item", F.lit(EPSILON), F.lit(1 - DELTA), F.lit(1))
    blob = df.agg(sketch.alias("cms")).first()["cms"]
    elapsed = time.perf_counter() - start
    assert blob is not None and len(blob) > 2000 * 4 * 8
    return elapsed


def time_ordered_floor(spark, path: str) -> float:
    """What any per-site pass in stream order costs before it sketches anything: every row
    shuffled to its site (the same round robin routing) and handed to Python, counted there.
    Splitter's sub-cells depend on the order of their rows, so it cannot go below this."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    def count_rows(batches):
        rows = sum(batch.num_rows for batch in batches)
        yield pa.RecordBatch.from_pydict({"rows": [rows]})

    df = spark.read.parquet(path)
    start = time.perf_counter()
    site = F.pmod(F.col("t"), F.lit(SHARDS))  # round robin over positions, as the job
    # one task per site: each site's value that hash partitioning sends to a task of its own
    group_ids = F.array(*[F.lit(g) for g in spread_group_ids(SHARDS)])
    task = F.element_at(group_ids, site.cast("int") + 1)
    shipped = df.select(task.alias("task"), (F.col("t") * 1000).alias("time"), "item")
    rows = shipped.repartition(SHARDS, "task").mapInArrow(count_rows, "rows long").collect()
    elapsed = time.perf_counter() - start
    assert sum(r["rows"] for r in rows) == df.count()
    return elapsed


def time_sites_floor(spark, path: str) -> float:
    """The JVM aggregation every mergeable DistCM job starts with: each site's row count and
    last step, the site every row's position modulo the shards (the job's own routing and
    counting)."""
    from pyspark.sql import functions as F

    from windowkit.spark.countmin import count_min_sites

    df = spark.read.parquet(path)
    start = time.perf_counter()
    sites = count_min_sites(df, "item", "t", shards=SHARDS)
    counts = sites.groupBy("shard").agg(F.count(F.lit(1)).alias("n"),
                                        F.max("position").alias("last")).collect()
    elapsed = time.perf_counter() - start
    assert sum(r["n"] for r in counts) == df.count()
    return elapsed


def _floor_sql(view: str) -> tuple[str, str, str, int, int]:
    """The SQL of Proportional's two passes without windowkit or Python: the summary (the
    last position and every site's rows), and the parts (``count_min_sketch`` per site and
    block of the last blocks, the plan's own aggregate and arguments) from a first position
    ``{first}``, that first position from a summary ``{summary}``, the blocks' width in
    positions and the blocks before the last that count."""
    from windowkit.spark.countmin.snapshots import count_min_operator
    from windowkit.spark.mergeable import _sql_literal, merge_plan_of

    plan = merge_plan_of(count_min_operator(window=WINDOW, algorithm="proportional",
                                            epsilon=EPSILON, delta=DELTA)())
    name, _, arguments = plan.aggregate
    width = plan.span * plan.tick // 1000  # positions: one millisecond each
    call = ", ".join(["item", *[_sql_literal(a) for a in arguments]])
    counts = ", ".join(f"count_if(pmod(t, {SHARDS}) = {s}) AS c{s}" for s in range(SHARDS))
    summary = f"SELECT struct(max(t) AS e, {counts}) AS s FROM {view}"
    parts = (f"SELECT CAST(pmod(t, {SHARDS}) AS INT) AS site, t div {width} AS block, "
             f"{name}({call}) AS part, max(t) AS last FROM {view} WHERE t >= {{first}} "
             "GROUP BY 1, 2")
    first = f"((({{summary}}).e div {width}) - {plan.lag}) * {width}"
    return summary, parts, first, width, plan.lag


def time_sql_floor(spark, path: str, lazy: bool, python_stages: bool = False
                   ) -> tuple[float, list]:
    """Proportional's two passes (see :func:`_floor_sql`) with nothing of windowkit's: run as
    two actions with the first position a literal (``lazy`` False: the eager shape), or as one
    plan with the summary a scalar subquery (the lazy shape windowkit's functions have: no
    Spark job before the caller's action). The few block sketches are collected; merging them
    is not timed. With ``python_stages`` (lazy only), the parts then go through a Python task
    that passes them on and a Python UDF over all of them that joins their bytes (the shape of
    a lazy job's finish and merge, doing nothing), whose one row is collected. Returns the
    seconds and the parts (every shape must agree)."""
    view = "wk_bench_floor"
    spark.read.parquet(path).createOrReplaceTempView(view)
    summary, parts, first, width, lag = _floor_sql(view)
    start = time.perf_counter()
    if lazy:
        # Spark pushes a comparison of a column with a scalar subquery into the Parquet
        # scan (not with an expression of one, nor with a field of one it merged with
        # another): the first position is a subquery over one row holding the summary's
        bound = first.format(summary=f"({summary})")
        query = (f"SELECT p.*, ({summary}) AS summary FROM "
                 f"({parts.format(first=f'(SELECT {bound} FROM range(1))')}) p")
        if python_stages:
            joined = _python_stages(spark.sql(query)).first()["joined"]
            elapsed = time.perf_counter() - start
            return elapsed, joined
        rows = spark.sql(query).collect()
    else:
        row = spark.sql(summary).first()
        literal = (row["s"]["e"] // width - lag) * width
        rows = spark.sql(parts.format(first=literal)).collect()
    elapsed = time.perf_counter() - start
    return elapsed, sorted((r["site"], r["block"], bytes(r["part"])) for r in rows)


def _python_stages(parts):
    """``parts`` through a Python task that passes them on, then a Python UDF that joins the
    bytes of all of them in (site, block) order: one row, ``joined``."""
    from pyspark.sql import functions as F

    def pass_on(batches):
        yield from batches

    @F.udf(returnType="binary")
    def join(blobs):
        return b"".join(blobs)

    passed = parts.coalesce(1).mapInArrow(pass_on, parts.schema)
    gathered = passed.agg(F.expr("sort_array(collect_list(struct(site, block, part))) AS p"))
    return gathered.select(join(F.col("p.part")).alias("joined"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--output", type=Path, default=RESULTS,
                        help="folder of countmin_spark.json (default: bench/results)")
    args = parser.parse_args()

    from windowkit.spark.session import windowkit_session

    spark = windowkit_session("local[2]", app_name="windowkit-bench", shuffle_partitions=2,
                              quiet=True)
    with tempfile.TemporaryDirectory() as folder:
        path = write_input(args.rows, folder)
        shuffled = write_input(args.rows, folder, shuffled=True)
        cases = [("Spark count_min_sketch (no window)", None, None)]
        for algorithm in ("splitter", "proportional", "simple"):
            cases.append((f"DistCM {algorithm}, default cadence", algorithm, None))
        cases.append((SHUFFLED, "proportional", None))
        cases.append((FLOOR, "floor", None))
        cases.append((SITES_FLOOR, "sites", None))
        cases.append((EAGER_FLOOR, "eager", None))
        cases.append((LAZY_FLOOR, "lazy", None))
        cases.append((PYTHON_FLOOR, "python", None))
        # warm-up: JVM, Python workers, numba caches (not timed)
        time_spark_cms(spark, path)
        for algorithm in ("splitter", "proportional", "simple"):
            time_distcm(spark, path, algorithm, None)
        time_distcm(spark, shuffled, "proportional", None)
        time_sql_floor(spark, path, lazy=False)
        time_sql_floor(spark, path, lazy=True)
        time_sql_floor(spark, path, lazy=True, python_stages=True)
        seconds: dict[str, list[float]] = {name: [] for name, _, _ in cases}
        parts: dict[str, list] = {}
        for _ in range(args.runs):
            for name, algorithm, every in cases:
                if algorithm is None:
                    seconds[name].append(time_spark_cms(spark, path))
                elif algorithm == "floor":
                    seconds[name].append(time_ordered_floor(spark, path))
                elif algorithm == "sites":
                    seconds[name].append(time_sites_floor(spark, path))
                elif algorithm in ("eager", "lazy", "python"):
                    elapsed, parts[algorithm] = time_sql_floor(
                        spark, path, algorithm != "eager", python_stages=algorithm == "python")
                    seconds[name].append(elapsed)
                else:
                    source = shuffled if name == SHUFFLED else path
                    seconds[name].append(time_distcm(spark, source, algorithm, every))
                print(f"  {name}: {seconds[name][-1]:.2f} s", flush=True)
    spark.stop()
    # the two shapes of the floor are one job: the same block sketches, byte for byte
    assert parts["eager"] == parts["lazy"], "the floor's eager and lazy parts differ"
    assert parts["python"] == b"".join(part for _, _, part in parts["eager"]), (
        "the floor's Python stages changed the parts")

    peer = args.rows / statistics.median(seconds[cases[0][0]])
    print(f"\nSpark DistCM throughput: {args.rows:,} rows, Zipf(1) over 1M ids, eps={EPSILON} "
          f"delta=1/16, global window N={WINDOW:,}, {SHARDS} shards, local[2]; median of "
          f"{args.runs} runs; load average {os.getloadavg()[0]:.1f}")
    print(f"{'job':50s} {'median s':>9s} {'M rows/s':>9s} {'x Spark CMS':>12s}")
    rows = []
    for name, algorithm, every in cases:
        med = statistics.median(seconds[name])
        rate = args.rows / med
        print(f"{name:50s} {med:9.2f} {rate / 1e6:9.2f} {rate / peer:12.2f}")
        rows.append({"job": name, "algorithm": algorithm, "snapshot_every": every,
                     "seconds": seconds[name], "median_s": med, "rows_per_s": rate,
                     "ratio_to_spark_cms": rate / peer})
    args.output.mkdir(parents=True, exist_ok=True)
    out = {"rows": args.rows, "runs": args.runs, "epsilon": EPSILON, "delta": DELTA,
           "window": WINDOW, "shards": SHARDS, "master": "local[2]",
           "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "load_average_1m_at_end": os.getloadavg()[0], "results": rows}
    (args.output / "countmin_spark.json").write_text(json.dumps(out, indent=2))
    print(f"wrote {args.output / 'countmin_spark.json'}")


if __name__ == "__main__":
    main()
