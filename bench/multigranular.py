"""Multi-granular windows: the paper's experiments on the core, and Spark against its peers.

Core (Patroumpas & Sellis, section V, Figs. 5-8), one time unit = 1 second, LBL-like connection
records from ``windowkit.datasets.connections`` at ``r`` tuples per time unit: aggregation
(SUM on duration, with count/mean/min/max), regression (on duration) and recurring items (on
protocol), each timed per tuple and per time unit over a stream of ``--units`` time units:

* Fig. 5: cost against the stream rate r = 10K..100K tuples per unit, 5 levels, widest 40 units;
* Fig. 6: cost against the number of levels n = 2..10, widest range fixed at 40 units;
* Fig. 7: cost against the granules per level u, 5 levels (ranges u, 2u, 4u, 8u, 16u);
* Fig. 8: state bytes (``to_bytes``) against levels, including 5 and 10 recurring items.

Spark (``--spark``): batch, ``--rows`` rows over 1,000 keys, 5 levels, count/sum/mean/min/max:
``multi_granular`` against (a) five separate ``window()`` aggregations and (b) the expert SQL
(panes per finest granule, then a range window per level); all three are checked to give the
same rows. Then Structured Streaming rows/s over 10 files.

    .venv/bin/python bench/multigranular.py                 # core, paper's experiments
    .venv/bin/python bench/multigranular.py --quick         # smaller, for a smoke run
    .venv/bin/python bench/multigranular.py --spark --rows 1e7
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np
import pandas as pd

from windowkit.core.multigranular import MultiGranularAggregator, RecurringItems
from windowkit.datasets.connections import connection_records

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
        for op in ops:
            out["fig5_rate"].append({"rate": rate, **measure(op, PAPER_LEVELS, df, repeats)})
    top = max(rates)
    df = stream(top, units)
    for n in (2, 3, 4, 5, 10):
        levels = [(round(40 * (k + 1) / n), 1) for k in range(n)]
        for op in ops:
            out["fig6_levels"].append({"levels": n, "rate": top,
                                       **measure(op, levels, df, repeats)})
    for u in (2, 5, 10, 20):
        levels = [(u * 2**k, 2**k) for k in range(5)]
        udf = stream(top, max(units, 2 * u * 16))
        for op in ops:
            out["fig7_granules"].append({"granules": u, "rate": top,
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--units", type=int, default=60, help="time units per core stream")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small rates, one repeat")
    parser.add_argument("--spark", action="store_true", help="also run the Spark part")
    parser.add_argument("--rows", type=float, default=1e7, help="Spark batch rows")
    parser.add_argument("--skip-core", action="store_true")
    args = parser.parse_args(argv)
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
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as fh:
        json.dump(results, fh, indent=1)
    print(f"\nwrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
