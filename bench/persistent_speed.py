"""Throughput of the persistent-item sketches against the exact (naive) algorithm.

Streams: Synthetic1 of the paper's Table 1 scaled to about 10 M ``(item, slot)`` tuples
(``--tuples`` changes the size), in two shapes:

* "paper": 2,880 slots (the paper's), universe ~39 k items; fixed window n = 2880 (the whole
  stream), sliding window n = 288 (the paper's query window);
* "wide": 288 slots, universe ~390 k items (a tenth of the paper's 4 M); both windows n = 288.

Every algorithm gets the same treatment: one vectorized ``update`` per batch of ``--batch``
rows (numpy + numba kernels sharing the same hash table; no per-tuple Python). After one
untimed warm-up run of each algorithm (JIT, numba cache), ``--runs`` rounds each run every
algorithm once in turn (round-robin, the order rotated by one per round), so that load from
elsewhere on this shared machine hits all of them alike. The JSON keeps every run's seconds;
the table gives the median seconds and, per sketch, two speedups over its exact baseline:
"vs exact" (ratio of the medians) and "paired" (median over rounds of the same round's
exact seconds / sketch seconds).

* fixed window: ``PersistentItemsSketch`` vs ``ExactPersistence`` (one tuple per distinct item);
* sliding window: ``SlidingPersistentItemsSketch`` vs ``ExactPersistence(window="sliding")``
  (one tuple per distinct (item, slot) in the window).

Logical space compression = exact tuples / sketch tuples (the paper: close to eps n / 2 for the
sliding window). Items are int64, then IPv4 strings (hashed with pandas' SipHash first).

Spark rows (``--spark``): the "paper" stream (int items) as a Parquet file of rows with
event times (slot * 30 s + a random offset), read by a ``local[2]`` session; the Spark job
(:func:`windowkit.spark.persistent.persistent_items`) against the exact Spark SQL baseline
(:func:`windowkit.spark.persistent.exact_persistent_items`), sliding (n = 288) and fixed
(n = 2880), each run to completion into the ``noop`` sink, runs interleaved, median reported.
``--spark-tuples`` draws a smaller stream (fewer items, same slots); ``--only-spark`` skips
the core rows. Any callable registered with :func:`register_spark_row` (or set as
``SPARK_ROW``) replaces it; it receives the stream and returns a dict with at least ``name``
and ``tuples_per_s``.

    python bench/persistent_speed.py            # ~10 M tuples, 3 runs
    python bench/persistent_speed.py --quick    # ~1 M tuples
    python bench/persistent_speed.py --spark --only-spark --spark-runs 3
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from windowkit.core.persistence import (
    ExactPersistence,
    PersistentItemsSketch,
    SlidingPersistentItemsSketch,
)
from windowkit.datasets.persistent_streams import (
    SYNTHETIC1,
    PersistentStream,
    expected_tuples,
    synthetic1,
    to_ipv4,
)

RESULTS = Path(__file__).resolve().parent / "results"
SHAPES = {"paper": (2880, 2880, 288), "wide": (288, 288, 288)}  # slots, fixed n, sliding n
ALPHA, EPSILON = 0.5, 0.1
TARGET = 20e6

SPARK_ROW: Callable[[PersistentStream], dict[str, Any] | None] | None = None
"""Hook for the Spark-job row (set by the Spark layer; ``None`` skips it)."""


def register_spark_row(fn: Callable[[PersistentStream], dict[str, Any] | None]) -> None:
    """Install the function that measures the Spark job on the same stream."""
    global SPARK_ROW
    SPARK_ROW = fn


SLOT_SECONDS = 30


def spark_row(stream: PersistentStream, runs: int = 3, tuples: int | None = None,
              master: str = "local[2]") -> dict[str, Any]:
    """Rows/s of the Spark job against the exact Spark SQL baseline on ``stream`` (int items)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from windowkit.spark.persistent import exact_persistent_items, persistent_items
    from windowkit.spark.session import windowkit_session

    if tuples is not None and int(tuples) < len(stream):  # a smaller universe, all the slots
        per_item = expected_tuples(1, stream.n_slots, SYNTHETIC1)
        stream = synthetic1(universe_size=int(round(tuples / per_item)),
                            n_slots=stream.n_slots, seed=42)
    size = len(stream)
    slot_us = SLOT_SECONDS * 1_000_000
    rng = np.random.default_rng(7)
    times = stream.slots[:size] * slot_us + rng.integers(0, slot_us, size)
    folder = Path(tempfile.mkdtemp(prefix="windowkit-persistent-bench-"))
    try:
        pq.write_table(pa.table({"item": stream.items[:size],
                                 "t": pa.array(times, pa.timestamp("us", tz="UTC"))}),
                       folder / "rows.parquet", row_group_size=1 << 20)
        spark = windowkit_session(master, app_name="windowkit-persistent-bench", quiet=True)
        df = spark.read.parquet(str(folder / "rows.parquet"))
        _, fixed_n, window_n = SHAPES["paper"]
        common = {"item": "item", "time": "t", "slot": f"{SLOT_SECONDS} seconds",
                  "alpha": ALPHA}
        jobs = {
            "spark sliding sketch": lambda: persistent_items(
                df, **common, window_slots=window_n, epsilon=EPSILON, sliding=True),
            "spark sliding exact": lambda: exact_persistent_items(
                df, **common, window_slots=window_n, sliding=True),
            "spark fixed sketch": lambda: persistent_items(
                df, **common, window_slots=fixed_n, epsilon=EPSILON, sliding=False),
            "spark fixed exact": lambda: exact_persistent_items(
                df, **common, window_slots=fixed_n, sliding=False),
        }
        seconds: dict[str, list[float]] = {name: [] for name in jobs}
        reported = {  # also the warm-up: Python workers, numba cache, JVM JIT
            name: job().where("estimate IS NOT NULL" if "sketch" in name
                              else "persistence IS NOT NULL").count()
            for name, job in jobs.items()}
        for _ in range(runs):  # interleaved, so that load from elsewhere hits all alike
            for name, job in jobs.items():
                start = time.perf_counter()
                job().write.format("noop").mode("overwrite").save()
                seconds[name].append(time.perf_counter() - start)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    rows = []
    for name, times_ in seconds.items():
        med = statistics.median(times_)
        rows.append({"algorithm": name, "rows": size, "seconds_median": med,
                     "seconds_all": times_, "rows_per_s": size / med,
                     "reported_rows": reported[name]})
    for kind in ("sliding", "fixed"):
        sketch = next(r for r in rows if r["algorithm"] == f"spark {kind} sketch")
        exact = next(r for r in rows if r["algorithm"] == f"spark {kind} exact")
        sketch["speedup_vs_exact"] = sketch["rows_per_s"] / exact["rows_per_s"]
    print(f"Spark ({master}, {spark.conf.get('spark.sql.shuffle.partitions')} shuffle "
          f"partitions): {size:,} rows of the 'paper' stream, int items, median of {runs}")
    print(f"{'job':<22} {'M rows/s':>9} {'median s':>9} {'output rows':>12} {'vs exact':>8}")
    for r in rows:
        vs = f"{r['speedup_vs_exact']:.2f}x" if "speedup_vs_exact" in r else ""
        print(f"{r['algorithm']:<22} {r['rows_per_s'] / 1e6:>9.3f} {r['seconds_median']:>9.1f} "
              f"{r['reported_rows']:>12,} {vs:>8}")
    sliding = rows[0]
    return {"name": "spark sliding sketch", "tuples_per_s": sliding["rows_per_s"],
            "master": master, "rows": rows}


def make_algorithms(fixed_n: int, window: int) -> dict[str, Callable[[], Any]]:
    """Factories of the four timed algorithms, in the order each round runs them."""
    return {
        "fixed sketch": lambda: PersistentItemsSketch(ALPHA, EPSILON, fixed_n, seed=1),
        "fixed exact": lambda: ExactPersistence(fixed_n, window="fixed"),
        "sliding sketch": lambda: SlidingPersistentItemsSketch(ALPHA, EPSILON, window, seed=1),
        "sliding exact": lambda: ExactPersistence(window, window="sliding"),
    }


def run_once(factory: Callable[[], Any], items: np.ndarray, slots: np.ndarray,
             batch: int) -> tuple[float, Any]:
    """Seconds to feed the whole stream to a fresh algorithm, in batches, and the algorithm."""
    algo = factory()
    start = time.perf_counter()
    for lo in range(0, items.size, batch):
        algo.update(items[lo:lo + batch], slots[lo:lo + batch])
    return time.perf_counter() - start, algo


def describe(algo: Any, name: str) -> dict[str, int]:
    """Size of the final state of one run: tuples, bytes and reported items."""
    reported = algo.persistent_items(ALPHA) if "exact" in name else algo.persistent_items()
    return {"state_tuples": algo.num_tuples, "memory_bytes": algo.memory_bytes(),
            "reported": len(reported)}


def time_round_robin(algorithms: dict[str, Callable[[], Any]], items: np.ndarray,
                     slots: np.ndarray, runs: int,
                     batch: int) -> tuple[dict[str, list[float]], dict[str, dict[str, int]]]:
    """Per-run seconds of every algorithm, runs interleaved, and each one's final state.

    One untimed warm-up run of each (JIT, numba cache, allocator), then ``runs`` rounds that
    run every algorithm once, so that load from elsewhere on the machine hits all of them
    alike and a sketch and its exact baseline can be compared round by round. The round's
    order is rotated by one each time, so no algorithm always follows the same one (e.g. the
    one that just freed half a gigabyte). Each state is dropped before the next run starts.
    """
    names = list(algorithms)
    states = {}
    for name in names:
        _, algo = run_once(algorithms[name], items, slots, batch)
        states[name] = describe(algo, name)
        del algo
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for r in range(runs):
        for name in names[r % len(names):] + names[:r % len(names)]:
            elapsed, algo = run_once(algorithms[name], items, slots, batch)
            seconds[name].append(elapsed)
            del algo
    return seconds, states


def compare(sketch: dict[str, Any], exact: dict[str, Any], n: int) -> None:
    """Add the sketch-vs-exact columns to the sketch's row (speedups are > 1 when faster).

    ``speedup_vs_exact`` is the ratio of the median seconds; ``speedup_vs_exact_paired`` the
    median over rounds of exact seconds / sketch seconds of the same round, which cancels
    load that lasted a round.
    """
    paired = [e / s for s, e in zip(sketch["seconds_all"], exact["seconds_all"], strict=True)]
    sketch["logical_compression"] = exact["state_tuples"] / max(1, sketch["state_tuples"])
    sketch["eps_n_over_2"] = EPSILON * n / 2
    sketch["memory_compression"] = exact["memory_bytes"] / max(1, sketch["memory_bytes"])
    sketch["speedup_vs_exact"] = exact["seconds_median"] / sketch["seconds_median"]
    sketch["speedups_per_round"] = paired
    sketch["speedup_vs_exact_paired"] = statistics.median(paired)


def measure(items: np.ndarray, slots: np.ndarray, runs: int, batch: int, kind: str,
            shape: str) -> list[dict[str, Any]]:
    """Rows of the table for one stream shape and item kind (see :func:`time_round_robin`)."""
    _, fixed_n, window_n = SHAPES[shape]
    seconds, states = time_round_robin(make_algorithms(fixed_n, window_n), items, slots,
                                       runs, batch)
    rows = []
    for name, times in seconds.items():
        med = statistics.median(times)
        rows.append({
            "shape": shape, "algorithm": name, "items": kind, "tuples": int(items.size),
            "seconds_median": med, "seconds_all": times,
            "tuples_per_s": items.size / med, **states[name],
        })
    for window in ("fixed", "sliding"):
        sketch = next(r for r in rows if r["algorithm"] == f"{window} sketch")
        exact = next(r for r in rows if r["algorithm"] == f"{window} exact")
        compare(sketch, exact, fixed_n if window == "fixed" else window_n)
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    """The core rows; "vs exact" is the ratio of medians, "paired" the median round ratio."""
    head = (f"{'shape':<5} {'algorithm':<15} {'items':<5} {'median s':>8} {'M tuples/s':>10} "
            f"{'state tuples':>12} {'MB':>8} {'reported':>8} {'SC (eps n/2)':>14} "
            f"{'mem ratio':>9} {'vs exact':>8} {'paired':>7}")
    print(head)
    print("-" * len(head))
    for r in rows:
        sc = (f"{r['logical_compression']:.1f} ({r['eps_n_over_2']:.1f})"
              if "logical_compression" in r else "")
        mem = f"{r['memory_compression']:.1f}" if "memory_compression" in r else ""
        vs = f"{r['speedup_vs_exact']:.2f}x" if "speedup_vs_exact" in r else ""
        paired = (f"{r['speedup_vs_exact_paired']:.2f}x" if "speedup_vs_exact_paired" in r
                  else "")
        print(f"{r['shape']:<5} {r['algorithm']:<15} {r['items']:<5} "
              f"{r['seconds_median']:>8.3f} {r['tuples_per_s'] / 1e6:>10.1f} "
              f"{r['state_tuples']:>12,} {r['memory_bytes'] / 1e6:>8.1f} {r['reported']:>8,} "
              f"{sc:>14} {mem:>9} {vs:>8} {paired:>7}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuples", type=float, default=10e6)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="1 M tuples, 3 runs")
    parser.add_argument("--no-strings", action="store_true")
    parser.add_argument("--spark", action="store_true", help="add the Spark rows")
    parser.add_argument("--spark-runs", type=int, default=3)
    parser.add_argument("--spark-tuples", type=float, default=None,
                        help="rows for the Spark jobs (default: the whole 'paper' stream)")
    parser.add_argument("--only-spark", action="store_true", help="skip the core rows")
    args = parser.parse_args(argv)
    if args.spark or args.only_spark:
        register_spark_row(functools.partial(spark_row, runs=args.spark_runs,
                                             tuples=args.spark_tuples))
    target = 1e6 if args.quick else args.tuples
    rows: list[dict[str, Any]] = []
    streams = {}
    for shape, (n_slots, fixed_n, window_n) in SHAPES.items():
        per_item = expected_tuples(1, n_slots, SYNTHETIC1)
        stream = synthetic1(universe_size=int(round(target / per_item)), n_slots=n_slots,
                            seed=42)
        streams[shape] = stream
        if args.only_spark:
            continue
        print(f"[{shape}] Synthetic1: {len(stream):,} tuples, {stream.universe_size:,} items, "
              f"{n_slots} slots; fixed n={fixed_n}, sliding n={window_n}; alpha={ALPHA}, "
              f"eps={EPSILON}; batches of {args.batch:,}; median of {args.runs} interleaved runs")
        rows += measure(stream.items, stream.slots, args.runs, args.batch, "int", shape)
        if not args.no_strings:
            rows += measure(to_ipv4(stream.items), stream.slots, args.runs, args.batch, "ipv4",
                            shape)
    print_table(rows)
    spark = SPARK_ROW(streams["paper"]) if SPARK_ROW is not None else None
    result = {
        "streams": {k: {"dataset": "Synthetic1", "tuples": len(v),
                        "universe_size": v.universe_size, "n_slots": v.n_slots}
                    for k, v in streams.items()},
        "params": {"alpha": ALPHA, "epsilon": EPSILON, "shapes": SHAPES,
                   "batch": args.batch, "runs": args.runs},
        "rows": rows,
        "spark": spark,
        "target_tuples_per_s": TARGET,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.only_spark:
        out = RESULTS / "persistent_speed_spark.json"
        out.write_text(json.dumps({"streams": result["streams"], "spark": spark}, indent=2))
        print(f"wrote {out}")
        return result
    ints = [r for r in rows if r["items"] == "int" and "sketch" in r["algorithm"]]
    result["meets_target"] = all(r["tuples_per_s"] >= TARGET for r in ints)
    result["sketches_not_slower_than_exact"] = all(r["speedup_vs_exact"] >= 1 for r in ints)
    result["sketches_not_slower_than_exact_paired"] = all(
        r["speedup_vs_exact_paired"] >= 1 for r in ints)
    print(f"sketches >= {TARGET / 1e6:.0f} M tuples/s on int items: {result['meets_target']}; "
          f"no slower than exact: {result['sketches_not_slower_than_exact']} (medians), "
          f"{result['sketches_not_slower_than_exact_paired']} (paired)")
    if spark is None:
        print("Spark-job row: not measured (run with --spark)")
    out = RESULTS / "persistent_speed.json"
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
