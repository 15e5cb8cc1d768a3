"""Streaming state at scale (issue #17): does a micro-batch cost what it touches, or what is held?

For threshold frames (keys = routers) and sliding persistent items (keys of state = items), a
streaming query first loads ``K`` keys into state (one Parquet file, one micro-batch, one row
per key), then runs ``--batches`` micro-batches of ``--rows`` rows each (one file each,
``maxFilesPerTrigger=1``) over either 1,000 of those keys or all of them. For each measured
micro-batch: its time (Spark's ``triggerExecution``) and the bytes of the files it added to the
checkpoint's ``state`` folder. The table and JSON (``bench/results/state_scale.json``) give, per
setting, the median over the last ``--steady`` micro-batches (the steady state: a chunked state
first cuts its chunks anew, once, to suit the keys a micro-batch touches) and the worst
micro-batch after the load, with the adapter's git commit, so runs of the adapter before and
after a change can sit side by side.

The script uses the ``windowkit`` of the tree it lives in, in the driver and in Spark's Python
workers (through ``PYTHONPATH``), so the same command measures any checkout (copy the script
into an older one). ``bench/results/state_scale.json`` holds the latest runs (1 K keys touched,
and all of 1 M touched, of one day: compare ratios within one file, this machine's speed varies
from day to day by half), ``state_scale_1626644.json`` the whole table when the keys first went
into chunks, ``state_scale_one_value.json`` the run before (each shard's whole state in one
value, commit caccfa6), and ``state_scale_before.json`` the run before the state was stored
compressed (commit fe13414)::

    .venv/bin/python bench/state_scale.py                      # 1 K and 100 K keys held
    .venv/bin/python bench/state_scale.py --keys 1000,100000,1000000,10000000 --max-keys 1e7
    .venv/bin/python bench/state_scale.py --keys 1000 --rows 20000 --batches 2   # smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # this tree's windowkit, whichever checkout runs the script
# ... in Spark's Python workers too: they import windowkit from the JVM's PYTHONPATH, which is
# this process's (an installed windowkit elsewhere would otherwise run in the workers)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])

T0 = pd.Timestamp("2024-01-01", tz="UTC").value // 1000  # µs
WRITE_ROWS = 1_000_000  # rows per Parquet row group / pandas frame while writing


def git_commit(path: str | None = None) -> str | None:
    """The last commit of ``path`` (default: HEAD) in this tree, or None outside git."""
    cmd = ["git", "-C", ROOT, "log", "-1", "--format=%H"] + (["--", path] if path else [])
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def git_dirty() -> bool | None:
    """Whether the tree has changes not committed (then ``commit`` is not what ran)."""
    cmd = ["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"]
    try:
        return bool(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    except (OSError, subprocess.CalledProcessError):
        return None


def write_file(path: str, keys: np.ndarray, times: np.ndarray, values: np.ndarray,
               position: int) -> None:
    """One input file written in pieces (10 M keys do not need 10 M Python strings at once)."""
    schema = pa.schema([("key", pa.string()), ("time", pa.timestamp("us", tz="UTC")),
                        ("value", pa.float64())])
    with pq.ParquetWriter(path, schema) as writer:
        for lo in range(0, len(keys), WRITE_ROWS):
            part = slice(lo, lo + WRITE_ROWS)
            names = pa.array(np.char.add("k", keys[part].astype(str)).astype(object))
            writer.write_table(pa.table([names, pa.array(times[part], pa.int64()).cast(
                pa.timestamp("us", tz="UTC")), pa.array(values[part])], schema=schema))
    os.utime(path, (1_700_000_000 + position, 1_700_000_000 + position))  # arrival order


def write_inputs(folder: str, held: int, touched: int | None, rows: int, batches: int,
                 seed: int) -> None:
    """File 0: every held key once; then ``batches`` files of ``rows`` rows over ``touched``
    keys (all held keys if None), one minute of event time apart, in time order."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder)
    keys = np.arange(held)
    write_file(os.path.join(folder, "part-0000.parquet"), keys,
               T0 + np.sort(rng.integers(0, 1_000_000, held)), np.zeros(held), 0)
    hot = None if touched is None else rng.choice(held, size=min(touched, held), replace=False)
    for b in range(1, batches + 1):
        if hot is None:  # every key, in a random order
            chosen = np.resize(rng.permutation(held), rows)
        else:
            chosen = hot[rng.integers(0, len(hot), rows)]
        start = T0 + b * 60_000_000
        times = start + np.sort(rng.integers(0, 60_000_000, rows))
        write_file(os.path.join(folder, f"part-{b:04d}.parquet"), chosen, times,
                   rng.random(rows), b)


def build_query(spark, technique: str, source: str, shards: int):
    from pyspark.sql import functions as F

    schema = "key string, time timestamp, value double"
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(source)
    if technique == "frames":
        from windowkit.spark import threshold_frames

        return threshold_frames(stream, "time", F.col("value") > 0.5, by="key",
                                min_duration="3 rows", late="10 seconds", shards=shards)
    from windowkit.spark import persistent_items

    # one-hour slots: no slot closes during the run, so the time is the state's, not reports'
    return persistent_items(stream, "key", "time", slot="1 hour", window_slots=24, alpha=0.5,
                            epsilon=0.1, late="10 seconds", shards=shards)


def state_bytes(checkpoint: str) -> dict[str, int]:
    """Size of every file under the checkpoint's ``state`` folder."""
    sizes = {}
    for folder, _, names in os.walk(os.path.join(checkpoint, "state")):
        for name in names:
            path = os.path.join(folder, name)
            try:
                sizes[path] = os.path.getsize(path)
            except OSError:  # removed by the state store's maintenance meanwhile
                pass
    return sizes


def run_setting(spark, technique: str, held: int, touched: int | None, rows: int,
                batches: int, steady: int, shards: int, workdir: str) -> dict:
    """Load the state, then time each micro-batch and the state bytes it writes."""
    name = f"{technique}_{held}_{touched or 'all'}"
    source = os.path.join(workdir, f"{name}_in")
    staged = os.path.join(workdir, f"{name}_staged")
    write_inputs(staged, held, touched, rows, batches, seed=batches)  # the same draws each
    os.makedirs(source)
    checkpoint = os.path.join(workdir, f"{name}_ck")
    query = (build_query(spark, technique, source, shards).writeStream.format("noop")
             .option("checkpointLocation", checkpoint).start())
    seen = state_bytes(checkpoint)
    records = []
    last_batch = -1
    try:
        for i, file in enumerate(sorted(os.listdir(staged))):
            stat = os.stat(os.path.join(staged, file))
            os.replace(os.path.join(staged, file), os.path.join(source, file))
            os.utime(os.path.join(source, file), (stat.st_atime, stat.st_mtime))
            t0 = time.perf_counter()
            query.processAllAvailable()
            wall = time.perf_counter() - t0
            # the file's micro-batch, and the no-data one Spark may run after it to apply the
            # moved watermark (timers): both are the file's cost
            progress = [p for p in query.recentProgress if p["batchId"] > last_batch]
            last_batch = max([p["batchId"] for p in progress], default=last_batch)
            now = state_bytes(checkpoint)
            new = sum(size for path, size in now.items() if path not in seen)
            seen = now
            records.append({
                "file": i, "micro_batches": len(progress),
                "rows": sum(p["numInputRows"] for p in progress),
                "trigger_s": sum(p["durationMs"].get("triggerExecution", 0)
                                 for p in progress) / 1000 if progress else wall,
                "wall_s": round(wall, 3), "state_bytes_written": new})
    finally:
        query.stop()
        shutil.rmtree(os.path.join(workdir, f"{name}_in"), ignore_errors=True)
        shutil.rmtree(staged, ignore_errors=True)
    # the first batch loads the state; the next ones warm up, and a chunked state may cut its
    # chunks again (once) to suit the keys a micro-batch touches: the last ones are steady
    measured = records[1:][-min(steady, batches):]
    return {
        "technique": technique, "keys_held": held,
        # "all": each micro-batch's rows are drawn from every held key (so it touches
        # min(rows, held) of them); a number: from that many keys held
        "keys_touched": "all" if touched is None else min(touched, held),
        "distinct_keys_per_batch": min(rows, held) if touched is None
        else min(touched, held, rows),
        "rows_per_batch": rows, "batches": records,
        "median_batch_s": statistics.median(r["trigger_s"] for r in measured),
        "median_state_bytes": statistics.median(r["state_bytes_written"] for r in measured),
        "steady_batches": len(measured),
        "worst_batch_s": max(r["trigger_s"] for r in records[1:]),
        "load_batch_s": records[0]["trigger_s"],
        "checkpoint_bytes": sum(state_bytes(checkpoint).values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", default="1000,100000,1000000,10000000",
                        help="keys held, comma-separated")
    parser.add_argument("--max-keys", type=float, default=100_000,
                        help="skip settings holding more keys (default 100 K: a few minutes)")
    parser.add_argument("--touched", default="1000,all", help="keys touched per micro-batch")
    parser.add_argument("--techniques", default="frames,persistent")
    parser.add_argument("--rows", type=float, default=1e6, help="rows per micro-batch")
    parser.add_argument("--batches", type=int, default=7,
                        help="micro-batches after the one that loads the state")
    parser.add_argument("--steady", type=int, default=3,
                        help="the last micro-batches whose median is reported (at most "
                             "--batches)")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--output", default=os.path.join(ROOT, "bench", "results"))
    args = parser.parse_args()
    if args.batches < 1:
        parser.error(f"--batches must be at least 1; got {args.batches}")
    if args.steady < 1:
        parser.error(f"--steady must be at least 1; got {args.steady}")

    from windowkit.spark import windowkit_session

    spark = windowkit_session(args.master, app_name="bench-state-scale",
                              shuffle_partitions=args.shards, quiet=True)
    workdir = tempfile.mkdtemp(prefix="wk-bench-state-")
    held_list = [int(float(k)) for k in args.keys.split(",") if float(k) <= args.max_keys]
    results = []
    try:
        for technique in args.techniques.split(","):
            for held in held_list:
                for touched in args.touched.split(","):
                    t = None if touched == "all" else int(float(touched))
                    print(f"{technique}: {held:,} keys held, {touched} touched ...",
                          file=sys.stderr)
                    results.append(run_setting(spark, technique, held, t, int(args.rows),
                                               args.batches, args.steady, args.shards,
                                               workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        spark.stop()

    print(f"\n{'technique':<11}{'held':>12}{'touched':>9}{'batch s':>9}{'worst s':>9}"
          f"{'state MB/batch':>16}{'checkpoint MB':>15}")
    for r in results:
        print(f"{r['technique']:<11}{r['keys_held']:>12,}{str(r['keys_touched']):>9}"
              f"{r['median_batch_s']:>9.2f}{r['worst_batch_s']:>9.2f}"
              f"{r['median_state_bytes'] / 1e6:>16.3f}{r['checkpoint_bytes'] / 1e6:>15.2f}")
    report = {
        "commit": git_commit(), "adapter_commit": git_commit("windowkit/spark/adapter.py"),
        "uncommitted_changes": git_dirty(),
        "tree": ROOT, "master": args.master, "shards": args.shards,
        "rows_per_batch": int(args.rows), "machine": platform.platform(),
        "cpus": os.cpu_count(), "results": results,
    }
    os.makedirs(args.output, exist_ok=True)
    path = os.path.join(args.output, "state_scale.json")
    with open(path, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=1)
    print(f"\nwrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
