"""Update throughput of the Count-Min sketches against Apache DataSketches' count_min_sketch.

10 M items, Zipf(1) over 1 M integer ids; epsilon = 0.001, delta = 1/16 (4 x 2719); windowed
variants use a count-based window of N = 1,000,000 samples. Items are fed in batches of
``--batch`` (default 1,000,000). DataSketches has no batch update: its rate is measured with a
per-item ``update`` in a Python loop on a 1 M-item subsample. Median of ``--runs`` runs.

    .venv/bin/python bench/countmin_speed.py [--items 10000000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from windowkit.core.sketches import (
    CountMin,
    PerfectWindowCM,
    ProportionalWindowCM,
    SimpleWindowCM,
    SplitterWindowCM,
)
from windowkit.datasets.countmin_streams import zipf_ids

EPSILON, DELTA, WINDOW = 0.001, 1 / 16, 1_000_000
TARGETS = {"CountMin": 50e6, "SimpleWindowCM": 50e6, "ProportionalWindowCM": 50e6,
           "SplitterWindowCM": 10e6}
RESULTS = Path(__file__).resolve().parent / "results"


def make(name: str):
    if name == "CountMin":
        return CountMin.from_error(EPSILON, DELTA, seed=1)
    cls = {"PerfectWindowCM": PerfectWindowCM, "SimpleWindowCM": SimpleWindowCM,
           "ProportionalWindowCM": ProportionalWindowCM, "SplitterWindowCM": SplitterWindowCM}
    return cls[name].from_error(EPSILON, DELTA, window=WINDOW, seed=1)


def time_windowkit(name: str, items: np.ndarray, batch: int) -> float:
    sketch = make(name)
    start = time.perf_counter()
    for a in range(0, len(items), batch):
        sketch.update(items[a : a + batch])
    return len(items) / (time.perf_counter() - start)


def time_datasketches(items: np.ndarray) -> float:
    from datasketches import count_min_sketch

    cm = CountMin.from_error(EPSILON, DELTA)
    sketch = count_min_sketch(cm.depth, cm.width, 1)
    values = items.tolist()
    update = sketch.update
    start = time.perf_counter()
    for v in values:
        update(v)
    return len(values) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000_000)
    parser.add_argument("--ds-items", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    items = zipf_ids(args.items, 1_000_000, alpha=1.0, seed=42)
    names = ["CountMin", "PerfectWindowCM", "SimpleWindowCM", "ProportionalWindowCM",
             "SplitterWindowCM"]
    for name in names:  # compile the numba kernels outside the timing
        make(name).update(items[:1000])
    rates: dict[str, list[float]] = {"DataSketches count_min_sketch": []}
    for _ in range(args.runs):
        rates["DataSketches count_min_sketch"].append(time_datasketches(items[: args.ds_items]))
        for name in names:
            rates.setdefault(name, []).append(time_windowkit(name, items, args.batch))
    medians = {k: statistics.median(v) for k, v in rates.items()}
    ds = medians["DataSketches count_min_sketch"]

    cm = CountMin.from_error(EPSILON, DELTA)
    print(f"Count-Min update throughput: {args.items:,} items, Zipf(1) over 1M ids, "
          f"eps={EPSILON} delta=1/16 ({cm.depth}x{cm.width}), window N={WINDOW:,} samples "
          f"(count-based), batch {args.batch:,}; median of {args.runs} runs; DataSketches "
          f"per-item Python loop on {args.ds_items:,} items")
    print(f"{'sketch':32s} {'M updates/s':>12s} {'x DataSketches':>15s} {'target':>8s}  met")
    rows = []
    for name, rate in medians.items():
        target = TARGETS.get(name)
        met = "" if target is None else ("yes" if rate >= target else "NO")
        tgt = "" if target is None else f"{target / 1e6:.0f}"
        print(f"{name:32s} {rate / 1e6:12.1f} {rate / ds:15.1f} {tgt:>8s}  {met}")
        rows.append({"sketch": name, "updates_per_s": rate, "runs": rates[name],
                     "ratio_to_datasketches": rate / ds, "target": target})
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"items": args.items, "ds_items": args.ds_items, "batch": args.batch,
           "runs": args.runs, "epsilon": EPSILON, "delta": DELTA, "window": WINDOW,
           "depth": cm.depth, "width": cm.width, "machine": platform.processor() or
           platform.machine(), "results": rows}
    (RESULTS / "countmin_speed.json").write_text(json.dumps(out, indent=2))
    print(f"wrote {RESULTS / 'countmin_speed.json'}")


if __name__ == "__main__":
    main()
