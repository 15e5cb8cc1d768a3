"""Long runs stay flat (soak): does a stream's cost follow the live keys or the keys ever seen?

For each technique (threshold frames, multi-granular windows, window widening, windowed
Count-Min, persistent items) one streaming query runs over ``--batches`` micro-batches: small
Parquet files written up front, handed to the query one at a time (``maxFilesPerTrigger=1``),
each a minute of event time over ``--keys`` live keys, a tenth of which are replaced by new
keys every minute (each key lives about ten minutes, then never comes back, so its windows and
frames close). Key names have one width throughout (``k0012345``): names growing a digit
(``k9999``, then ``k10000``) make a shard's state compress worse for the twenty files in
which it holds names of both widths (their lengths and the names mixed): persistent items'
state, replayed through its operator outside Spark with Spark's shard of each key, grew 8%
there and came back, and stays within 2% with names of one width, its items and tuples held
flat from file 10 (the live keys and those whose window of ten slots has not yet closed).
A Spark run still shows a step of a tenth in its bytes per row written over files 32-39,
which that replay does not: it lies between the operator's state and the changelog, not
traced. Per micro-batch it records:

* ``batch_s``: Spark's ``triggerExecution`` of the file's micro-batches (the one reading it and
  the no-data one Spark may run after it for the moved watermark);
* ``state_rows`` and ``state_memory_bytes``: the progress's ``stateOperators`` (``numRowsTotal``
  counts state *rows*: a shard's value, its chunk index and its chunks, not keys;
  ``memoryUsedBytes`` is what RocksDB's memtables, table readers and block cache use in the
  JVM's native memory). It is no measure of live keys: each store's memtable holds about
  1 MB once written and empties when Spark snapshots the store (every 10 versions by default,
  the dips every fifth file), and the block cache keeps the blocks of SST files compaction has
  replaced until it reaches ``spark.sql.streaming.stateStore.rocksdb.blockCacheSizeMB`` (8 MB
  per store by default), so it climbs for the length of a 200-file run at a pace that follows
  the size of the state read (with the cache set to 1 MB, multi-granular's climbs a third as
  fast once the cache is full, after about 30 files; the rest of the climb is not traced).
  Bounding it as Spark documents (``spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage``
  true: one cache for every store of the node, ``maxMemoryUsageMB`` of 500 MB by default, the
  memtables charged to it) does not flatten it: a 60-file multi-granular run climbed as
  without it (0.058 MB a file from file 20, against 0.059), from 1.3 MB higher, the shared
  cache being larger than two stores' own; windowkit leaves the bound unset;
* ``state_written_bytes``: the bytes of the changelog files the file's micro-batches added
  to the checkpoint's ``state`` folder, per micro-batch (RocksDB's snapshots, written every
  few versions, left out).
  A shard holding fewer than 4,096 keys keeps them in one value, which every micro-batch that
  touches it writes whole: this is the state's size (compressed);
* ``worker_rss_bytes``: the resident memory of the Python processes under the driver's JVM
  (Spark's Python daemon and its workers), summed.

* ``state_rows_updated``: the state rows those micro-batches wrote (the progress's
  ``numRowsUpdated``, summed): a shard's value, index or chunks, each time it is written;
* ``state_bytes_per_row_written`` (derived from the two above, not recorded): the changelog
  bytes the file's micro-batches added per state row they wrote, the size of a shard's state
  as written, whichever of its shards a micro-batch happened to touch.

A single file is no measure of a level. Its micro-batches write each shard's state when they
touch it: the micro-batch reading the file touches both shards, the no-data micro-batch after
it (for the moved watermark) only the shards whose timer the watermark passes, which depends
on where their windows and frames are in their lives. So each file wrote the state of two or
of three shards (``state_rows_updated``), and ``state_written_bytes`` jumped between two
levels in the ratio 2:3 from one file to the next (multi-granular 125 KB and 188 KB) without
growing. Where that mix of two and three shards drifts over a slide (more files of one kind
than of the other), the written bytes' medians move with ``state_rows_updated`` while
``state_bytes_per_row_written`` stays flat: that curve, not the written bytes, tells growth of
the state. The bar is about growth, so the table compares
*medians over a slide of* ``--window`` *micro-batches* (default 10, the life of a key: one
turnover of the live keys): per technique and curve, the level is the median of the
``--window`` micro-batches from ``--settled`` (default 20) on, and the largest and the last
median of any later ``--window`` consecutive micro-batches are given as ratios of it; the
micro-batch time's slope is fitted to every micro-batch after ``--settled`` (per 100
micro-batches, as a fraction of its median). A curve that keeps growing after the keys start
leaving (state rows or bytes tracking the keys ever seen) is a leak.

Each technique runs in a process of its own (its own JVM and Python workers); the JSON
(``bench/results/soak.json``) keeps the other techniques' latest results, so they can be run
one at a time, and the PNG (``bench/results/soak.png``) draws all of them::

    .venv/bin/python bench/soak.py                              # all five, 200 micro-batches
    .venv/bin/python bench/soak.py --techniques frames --batches 30   # a quick look at one
    .venv/bin/python bench/soak.py --techniques widening --batches 60 \
        --conf spark.sql.streaming.stateStore.rocksdb.blockCacheSizeMB=1   # a setting tried
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

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

# this tree's windowkit (driver and Spark's workers) and its commit helpers
from state_scale import ROOT, T0, git_commit, git_dirty, state_bytes

TECHNIQUES = ("frames", "multigranular", "widening", "countmin", "persistent")
CURVES = ("batch_s", "worker_rss_bytes", "state_written_bytes", "state_rows_updated",
          "state_bytes_per_row_written", "state_rows", "state_memory_bytes")
MINUTE = 60_000_000
# digits of a key's number: 2,000 micro-batches of the default keys, all of one width
KEY_DIGITS = 7
CALLS = np.array(["accept", "dup", "execve", "read", "write"], dtype=object)
SCHEMA = pa.schema([("key", pa.string()), ("time", pa.timestamp("us", tz="UTC")),
                    ("value", pa.float64()), ("call", pa.string()), ("fd", pa.string()),
                    ("exe", pa.string()), ("ret", pa.string())])
DDL = ("key string, time timestamp, value double, call string, fd string, exe string, "
       "ret string")


def write_inputs(folder: str, batches: int, rows: int, keys: int, seed: int) -> None:
    """``batches`` files of ``rows`` rows, file ``b`` holding minute ``b`` of event time over
    the live keys ``[b * keys / 10, b * keys / 10 + keys)``."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder)
    step = max(1, keys // 10)
    for b in range(batches):
        key = b * step + rng.integers(0, keys, rows)
        times = T0 + b * MINUTE + np.sort(rng.integers(0, MINUTE, rows))
        table = pa.table([
            pa.array(key_names(key)),
            pa.array(times, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            pa.array(rng.random(rows)),
            pa.array(CALLS[rng.integers(0, len(CALLS), rows)]),
            pa.array(np.full(rows, "3", dtype=object)),
            pa.array(np.full(rows, "/bin/sh", dtype=object)),
            pa.array(np.full(rows, "0", dtype=object)),
        ], schema=SCHEMA)
        path = os.path.join(folder, f"part-{b:04d}.parquet")
        pq.write_table(table, path)
        os.utime(path, (1_700_000_000 + b, 1_700_000_000 + b))  # the source's order


def key_names(numbers: np.ndarray) -> np.ndarray:
    """Key names of one width (``k0000123``) for the key numbers of a run.

    Names of growing width (``k9999``, then ``k10000``) would make the state's bytes bump
    while a shard holds names of both widths: the length column and the names compress
    worse when their widths are mixed.

    Examples
    --------
    >>> key_names(np.array([7, 12_345])).tolist()
    ['k0000007', 'k0012345']
    """
    return np.char.add("k", np.char.zfill(numbers.astype(str), KEY_DIGITS)).astype(object)


def build_query(spark, technique: str, source: str, shards: int, late: str):
    """The technique's streaming DataFrame over the files of ``source``."""
    from pyspark.sql import functions as F

    from windowkit.spark import (
        multi_granular,
        persistent_items,
        threshold_frames,
        widen_detect,
        windowed_count_min,
    )

    stream = (spark.readStream.schema(DDL).option("maxFilesPerTrigger", 1).parquet(source))
    common = {"late": late, "shards": shards}
    if technique == "frames":
        # with a reporting schedule a key's frame closes once the watermark shows its next
        # report is absent: a key that leaves closes its frame
        return threshold_frames(stream, "time", F.col("value") > 0.5, by="key",
                                min_duration="2 rows", schedule="1 minute", **common)
    if technique == "multigranular":
        return multi_granular(stream, "time", "RANGES 5 MINUTES, 1 MINUTE "
                              "SLIDES 1 MINUTE, 30 SECONDS", by="key", value="value",
                              aggregates=["count", "sum", "max"], **common)
    if technique == "widening":
        return widen_detect(stream, "time", by="key", detector="remote-shell",
                            base="10 seconds", max_length=8, max_duration="2 minutes", **common)
    if technique == "countmin":
        return windowed_count_min(stream, "key", "time", window=10, unit="ticks",
                                  tick="1 minute", algorithm="proportional", **common)
    return persistent_items(stream, "key", "time", slot="1 minute", window_slots=10,
                            alpha=0.5, epsilon=0.1, **common)


def worker_memory() -> tuple[int, int]:
    """``(summed RSS, count)`` of the Python processes under this driver's JVM."""
    import psutil

    total = count = 0
    for jvm in psutil.Process().children():
        try:
            if "java" not in jvm.name():
                continue
            for proc in jvm.children(recursive=True):
                if "python" in proc.name():
                    total += proc.memory_info().rss
                    count += 1
        except psutil.Error:  # a worker that ended meanwhile
            continue
    return total, count


def _state_metrics(progress: list[dict]) -> tuple[int | None, int | None]:
    """The last progress's state rows and memory, summed over its stateful operators."""
    for p in reversed(progress):
        ops = p.get("stateOperators") or []
        if ops:
            return (sum(o.get("numRowsTotal", 0) for o in ops),
                    sum(o.get("memoryUsedBytes", 0) for o in ops))
    return None, None


def run_technique(technique: str, args: argparse.Namespace) -> dict:
    """Run one technique's query over ``args.batches`` files; its per-micro-batch curves."""
    from windowkit.spark import windowkit_session

    spark = windowkit_session(args.master, app_name=f"bench-soak-{technique}",
                              shuffle_partitions=args.shards, quiet=True,
                              extra_conf={"spark.sql.streaming.numRecentProgressUpdates":
                                          str(args.batches * 3 + 10), **spark_conf(args.conf)})
    workdir = tempfile.mkdtemp(prefix=f"wk-soak-{technique}-")
    staged, source = os.path.join(workdir, "staged"), os.path.join(workdir, "in")
    checkpoint = os.path.join(workdir, "ck")
    write_inputs(staged, args.batches, args.rows, args.keys, args.seed)
    os.makedirs(source)
    query = (build_query(spark, technique, source, args.shards, args.late).writeStream
             .format("noop").option("checkpointLocation", checkpoint).start())
    records, seen, last_batch = [], state_bytes(checkpoint), -1
    try:
        for i, name in enumerate(sorted(os.listdir(staged))):
            stat = os.stat(os.path.join(staged, name))
            os.replace(os.path.join(staged, name), os.path.join(source, name))
            os.utime(os.path.join(source, name), (stat.st_atime, stat.st_mtime))
            query.processAllAvailable()
            progress = [p for p in query.recentProgress if p["batchId"] > last_batch]
            last_batch = max([p["batchId"] for p in progress], default=last_batch)
            now = state_bytes(checkpoint)
            added = [size for path, size in now.items()
                     if path not in seen and path.endswith(".changelog")]
            rows, memory = _state_metrics(progress)
            rss, workers = worker_memory()
            records.append({
                "file": i, "micro_batches": len(progress),
                "rows": sum(p["numInputRows"] for p in progress),
                "batch_s": sum(p["durationMs"].get("triggerExecution", 0)
                               for p in progress) / 1000,
                "state_rows": rows, "state_memory_bytes": memory,
                "state_written_bytes": sum(added) // max(1, len(progress)),
                "state_rows_updated": sum(o.get("numRowsUpdated", 0) for p in progress
                                          for o in p.get("stateOperators") or []),
                "checkpoint_state_bytes": sum(now.values()),
                "worker_rss_bytes": rss, "workers": workers})
            seen = now
            if (i + 1) % 10 == 0:
                print(f"  {technique}: {i + 1}/{args.batches} micro-batches", file=sys.stderr)
    finally:
        query.stop()
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return {"technique": technique, "batches": records,
            "summary": summarize(records, args.settled, args.window)}


def spark_conf(pairs: list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` options as Spark settings.

    Examples
    --------
    >>> spark_conf(["spark.sql.streaming.stateStore.rocksdb.blockCacheSizeMB=1"])
    {'spark.sql.streaming.stateStore.rocksdb.blockCacheSizeMB': '1'}
    """
    conf = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            msg = f"`--conf` takes KEY=VALUE; got {pair!r}"
            raise ValueError(msg)
        conf[key.strip()] = value.strip()
    return conf


def curve_value(record: dict, curve: str) -> float | None:
    """A micro-batch's value of ``curve``: recorded, or derived from what was (None if absent).

    ``state_bytes_per_row_written`` is the file's changelog bytes (``state_written_bytes`` is
    per micro-batch) over the state rows its micro-batches wrote.

    Examples
    --------
    >>> rec = {"micro_batches": 2, "state_written_bytes": 150, "state_rows_updated": 3}
    >>> curve_value(rec, "state_bytes_per_row_written"), curve_value(rec, "batch_s")
    (100.0, None)
    """
    if curve != "state_bytes_per_row_written":
        return record.get(curve)
    written, rows = record.get("state_written_bytes"), record.get("state_rows_updated")
    if written is None or not rows:
        return None
    return written * record.get("micro_batches", 1) / rows


def window_medians(values: list[float], window: int) -> list[float]:
    """The median of every ``window`` consecutive values (all of them if fewer).

    Examples
    --------
    >>> window_medians([2, 3, 2, 3, 2, 3], 3)
    [2, 3, 2, 3]
    """
    window = min(window, len(values))
    return [statistics.median(values[i:i + window]) for i in range(len(values) - window + 1)]


def summarize(records: list[dict], settled: int, window: int = 10) -> dict:
    """Per curve: its level (the median of the ``window`` micro-batches from ``settled`` on),
    the largest and the last median of ``window`` consecutive micro-batches after it as
    ratios of that level; the micro-batch time's slope.

    A value that alternates between two levels from one micro-batch to the next keeps its
    medians flat; one that grows moves them.

    Examples
    --------
    >>> recs = [{"batch_s": 1.0 + i / 100, "worker_rss_bytes": 10 + i % 2} for i in range(8)]
    >>> s = summarize(recs, 1, window=3)
    >>> s["worker_rss_bytes"]["max_ratio"], round(s["batch_s_slope_per_100"], 3)
    (1.0, 0.962)
    """
    settled = min(settled, len(records) - 1)
    out: dict = {"settled_at": settled, "window": window}
    for curve in CURVES:
        values = [curve_value(r, curve) for r in records[settled:]]
        if not values or any(v is None for v in values):
            continue
        medians = window_medians(values, window)
        level = medians[0]
        if not level:
            continue
        out[curve] = {"level": level, "max": max(medians), "last": medians[-1],
                      "max_ratio": round(max(medians) / level, 3),
                      "last_ratio": round(medians[-1] / level, 3),
                      "max_single_ratio": round(max(values) / level, 3)}
    times = np.array([r["batch_s"] for r in records[settled:]])
    if len(times) > 1:
        slope = np.polyfit(np.arange(len(times)), times, 1)[0]
        # the change over 100 micro-batches, as a fraction of the median micro-batch
        out["batch_s_slope_per_100"] = float(slope * 100 / statistics.median(times))
    return out


def plot(results: dict[str, dict], path: str) -> None:
    """One panel per curve, one thin line per technique and, thick, its medians over the
    summary's window (drawn at each window's last micro-batch); the settled level marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("batch_s", "micro-batch time (s)", 1), ("worker_rss_bytes",
              "Python workers' RSS (MB)", 1e6), ("state_written_bytes",
              "state written per micro-batch (KB)", 1e3), ("state_bytes_per_row_written",
              "state written per state row (KB)", 1e3), ("state_memory_bytes",
              "RocksDB memory (MB)", 1e6), ("state_rows", "state rows", 1)]
    settled = next(iter(results.values()))["summary"]["settled_at"]
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 15), sharex=True)
    for ax, (curve, label, scale) in zip(axes, panels, strict=True):
        top = 0.0
        for technique, result in results.items():
            points = [(r["file"], curve_value(r, curve)) for r in result["batches"]]
            xs = [x for x, y in points if y is not None]
            ys = [y / scale for x, y in points if y is not None]
            line, = ax.plot(xs, ys, label=technique, linewidth=0.6, alpha=0.5)
            top = max([top, *(y for x, y in zip(xs, ys, strict=True) if x >= settled)])
            window = result["summary"].get("window", 1)
            if len(ys) >= window:
                ax.plot(xs[window - 1:], window_medians(ys, window), color=line.get_color(),
                        linewidth=2)
        ax.axvline(settled, color="grey", linestyle=":", linewidth=1)
        ax.set_ylabel(label)
        # the first micro-batches (JVM start, compiling) would squash the settled curves
        ax.set_ylim(bottom=0, top=top * 1.1 or None)
    axes[0].legend(loc="upper right", ncol=len(results), fontsize="small")
    axes[-1].set_xlabel("micro-batch (one file, one minute of event time)")
    fig.suptitle("Soak: keys come and go; the medians (thick) should stay flat after the "
                 "dotted line")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def print_table(results: dict[str, dict]) -> None:
    """Per technique and curve: the settled level, max and last ratios (of medians)."""
    print(f"\n{'technique':<14}{'curve':<22}{'median level':>14}{'max/level':>11}"
          f"{'last/level':>12}")
    for technique, result in results.items():
        summary = result["summary"]
        for curve in CURVES:
            if curve in summary:
                s = summary[curve]
                print(f"{technique:<14}{curve:<22}{s['level']:>14,.3f}{s['max_ratio']:>11.3f}"
                      f"{s['last_ratio']:>12.3f}")
        if "batch_s_slope_per_100" in summary:
            print(f"{technique:<14}{'time slope /100 mb':<22}{'':>14}"
                  f"{summary['batch_s_slope_per_100']:>+11.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--techniques", default=",".join(TECHNIQUES))
    parser.add_argument("--batches", type=int, default=200, help="micro-batches (files)")
    parser.add_argument("--rows", type=int, default=3000, help="rows per micro-batch")
    parser.add_argument("--keys", type=int, default=3000, help="live keys at any time")
    parser.add_argument("--settled", type=int, default=20,
                        help="the first micro-batch of the level compared with")
    parser.add_argument("--window", type=int, default=10,
                        help="micro-batches per median (the level and what it is compared "
                             "with)")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--late", default="10 seconds", help="watermark delay")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for the query's session (repeatable)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--output", default=os.path.join(ROOT, "bench", "results"))
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # the child's technique
    args = parser.parse_args()
    if args.batches < args.settled + args.window:
        parser.error(f"--batches must be at least --settled + --window "
                     f"({args.settled + args.window}); got {args.batches}")
    try:
        spark_conf(args.conf)
    except ValueError as error:
        parser.error(str(error))
    if args.one is not None:
        json.dump(run_technique(args.one, args), sys.stdout)
        return
    path = os.path.join(args.output, "soak.json")
    report = {"results": {}}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    for kept in report["results"].values():  # earlier runs, summarized as this run is
        kept["summary"] = summarize(kept["batches"], args.settled, args.window)
    for technique in args.techniques.split(","):
        if technique not in TECHNIQUES:
            parser.error(f"--techniques: {technique!r} is not one of {', '.join(TECHNIQUES)}")
        print(f"{technique}: {args.batches} micro-batches ...", file=sys.stderr)
        # a process of its own: its own JVM and Python workers, whose memory is measured
        child = subprocess.run([sys.executable, os.path.abspath(__file__), *sys.argv[1:],
                                "--one", technique], check=True,
                               stdout=subprocess.PIPE, text=True)
        result = json.loads(child.stdout)
        result.update({"commit": git_commit(), "uncommitted_changes": git_dirty(),
                       "settings": {k: getattr(args, k) for k in (
                           "batches", "rows", "keys", "shards", "late", "master", "seed",
                           "settled", "window", "conf")}})
        report["results"][technique] = result
    report.update({"machine": platform.platform(), "cpus": os.cpu_count()})
    results = {t: report["results"][t] for t in TECHNIQUES if t in report["results"]}
    print_table(results)
    os.makedirs(args.output, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=1)
    plot(results, os.path.join(args.output, "soak.png"))
    print(f"\nwrote {path} and soak.png", file=sys.stderr)


if __name__ == "__main__":
    main()
