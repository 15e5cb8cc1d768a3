"""Reproduce Figures 1, 2, 3, 4, 6, 8 and 9 of Rivetti, Busnel, Mostefaoui (windowed Count-Min).

Defaults (paper Section 4): N = 50,000, m = 3N, n = 1,000 items, 28 columns,
one row (delta = 0.5), shift width w = 2 c1, period p = 10,000, r = 4, Splitter mu = 1.5,
tau = 0.05. Metric: mean squared error against PERFECT over all n items, averaged over
checkpoints in windows 2 and 3 (the first window is skipped, as in the paper), then over runs;
splits = live sub-cells beyond one per cell, averaged the same way.

    .venv/bin/python bench/countmin_paper.py [--quick] [--runs R]

The paper repeats each run 100 times and drops the first and last decile; we run fewer
repetitions (the output says how many) and trim deciles only when there are at least 10.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from windowkit.core.sketches import (  # noqa: E402
    PerfectWindowCM,
    ProportionalWindowCM,
    SimpleWindowCM,
    SplitterWindowCM,
)
from windowkit.datasets.countmin_streams import (  # noqa: E402
    multi_distribution_stream,
    shifting_stream,
)

RESULTS = Path(__file__).resolve().parent / "results"
N0, N_ITEMS, WIDTH, P0, R0, MU0, TAU0 = 50_000, 1000, 28, 10_000, 4, 1.5, 0.05
DISTS = ("normal", "plateau", "zipf1", "zipf2")
ALGOS = ("simple", "proportional", "splitter")


def run_stream(items, window, depth, seed, tau=TAU0, mu=MU0, algos=ALGOS, checkpoints=100,
               skip=None):
    """MSE vs Perfect of each algorithm and Splitter's splits at evenly spaced checkpoints."""
    kw = {"depth": depth, "width": WIDTH, "seed": seed}
    sketches = {"perfect": PerfectWindowCM(window, **kw)}
    if "simple" in algos:
        sketches["simple"] = SimpleWindowCM(window, **kw)
    if "proportional" in algos:
        sketches["proportional"] = ProportionalWindowCM(window, **kw)
    sketches["splitter"] = SplitterWindowCM(window, tau=tau, mu=mu, **kw)
    skip = window if skip is None else skip
    stops = np.linspace(skip, len(items), checkpoints + 1).astype(np.int64)[1:]
    queries = np.arange(N_ITEMS)
    series = {a: [] for a in sketches if a != "perfect"}
    splits, pos = [], 0
    for stop in [skip, *stops.tolist()]:
        for s in sketches.values():
            s.update(items[pos:stop])
        pos = stop
        if stop == skip:
            continue
        ref = sketches["perfect"].estimate(queries).astype(np.float64)
        for a in series:
            series[a].append(float(np.mean((ref - sketches[a].estimate(queries)) ** 2)))
        splits.append(sketches["splitter"].n_splits())
    return {a: np.array(v) for a, v in series.items()}, np.array(splits), stops


def trimmed_mean(values):
    v = np.sort(np.asarray(values, dtype=np.float64))
    if len(v) >= 10:
        k = len(v) // 10
        v = v[k : len(v) - k]
    return float(v.mean())


def sweep(name, param, values, runs, make_config, algos=ALGOS):
    """Run every (value, distribution) pair ``runs`` times; average errors and splits."""
    out = {}
    for value in values:
        for dist in DISTS:
            cfg = make_config(value)
            errs = {a: [] for a in algos}
            spl = []
            for rep in range(runs):
                depth = cfg.get("depth", 1)
                items = shifting_stream(dist, 3 * cfg.get("window", N0), n=N_ITEMS,
                                        w=2 * depth, p=cfg.get("p", P0), r=R0,
                                        seed=1000 * rep + hash_dist(dist))
                series, splits, _ = run_stream(items, cfg.get("window", N0), depth, seed=rep,
                                               tau=cfg.get("tau", TAU0), mu=cfg.get("mu", MU0),
                                               algos=algos)
                for a in algos:
                    errs[a].append(series[a].mean())
                spl.append(splits.mean())
            out[(value, dist)] = {**{a: trimmed_mean(errs[a]) for a in algos},
                                  "splits": trimmed_mean(spl)}
        print(f"  {name}: {param}={value} done", flush=True)
    return out


def hash_dist(dist):
    return DISTS.index(dist) + 1 if dist in DISTS else 0


def avg_over_dists(res, value, key):
    return float(np.mean([res[(value, d)][key] for d in DISTS]))


def growth(res, values, key):
    """Mean ratio between consecutive parameter values (distribution-averaged)."""
    avgs = [avg_over_dists(res, v, key) for v in values]
    return float(np.mean([b / a for a, b in zip(avgs[:-1], avgs[1:], strict=True) if a > 0]))


def table(title, param, values, res, algos, paper_rows):
    print(f"\n{title}")
    head = f"{param:>8s} " + " ".join(f"{a:>13s}" for a in algos) + f" {'splits':>8s}"
    print(head + "   (MSE vs Perfect, mean over " + ", ".join(DISTS) + ")")
    for v in values:
        cells = " ".join(f"{avg_over_dists(res, v, a):13.4g}" for a in algos)
        print(f"{v!s:>8s} {cells} {avg_over_dists(res, v, 'splits'):8.1f}")
    print(f"  {'claim':58s} {'paper':>16s} {'ours':>12s}")
    for claim, paper, ours in paper_rows:
        ours_s = f"{ours:12.4g}" if isinstance(ours, float) else f"{ours!s:>12s}"
        print(f"  {claim:58s} {paper:>16s} {ours_s}")


def plot_sweep(fname, title, param, values, res, algos, logx=False):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for a, marker in zip(algos, "osd", strict=False):
        for d, ls in zip(DISTS, ("-", "--", ":", "-."), strict=True):
            axes[0].plot(values, [res[(v, d)][a] for v in values], ls, marker=marker,
                         label=f"{a} {d}")
    for d, ls in zip(DISTS, ("-", "--", ":", "-."), strict=True):
        axes[1].plot(values, [res[(v, d)]["splits"] for v in values], ls, marker="o", label=d)
    axes[0].set_yscale("log")
    for ax, ylabel in zip(axes, ("MSE vs Perfect", "splits s"), strict=True):
        ax.set_xlabel(param)
        ax.set_ylabel(ylabel)
        if logx:
            ax.set_xscale("log")
        ax.legend(fontsize=6)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(RESULTS / fname, dpi=110)
    plt.close(fig)


def main() -> None:  # noqa: PLR0915
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs and parameter values")
    parser.add_argument("--runs", type=int, default=None)
    args = parser.parse_args()
    runs = args.runs or (1 if args.quick else 10)
    RESULTS.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    print(f"windowed Count-Min, paper reproduction: {runs} run(s) per point (paper: 100, "
          f"deciles trimmed); depth 1, width {WIDTH}, n={N_ITEMS}, m=3N; "
          f"{'QUICK mode' if args.quick else 'full mode'}")
    report: dict = {"runs": runs, "quick": args.quick, "figures": {}}

    def store(fig, param, values, res, algos):
        report["figures"][fig] = {
            "param": param,
            "points": [{"value": v, "distribution": d, **res[(v, d)]}
                       for v in values for d in DISTS],
            "dist_mean": {str(v): {k: avg_over_dists(res, v, k) for k in (*algos, "splits")}
                          for v in values},
        }

    # Figure 1: window sizes
    n_values = [50_000, 100_000] if args.quick else [50_000, 100_000, 200_000, 400_000]
    res = sweep("fig1", "N", n_values, runs, lambda v: {"window": v})
    store("fig1", "N", n_values, res, ALGOS)
    table("Figure 1: window size N", "N", n_values, res, ALGOS, [
        ("Simple mean error", "> 1e7", float(np.mean([avg_over_dists(res, v, "simple")
                                                      for v in n_values]))),
        ("Proportional mean error", "~2.4e6", float(np.mean(
            [avg_over_dists(res, v, "proportional") for v in n_values]))),
        ("Splitter max error", "< 3.7e4", max(avg_over_dists(res, v, "splitter")
                                              for v in n_values)),
        ("Simple growth per 2x N", "3.7x", growth(res, n_values, "simple")),
        ("Proportional growth per 2x N", "8.9x", growth(res, n_values, "proportional")),
        ("Splitter growth per 2x N", "4.2x", growth(res, n_values, "splitter")),
        ("mean splits", "30 (sd 2.2)", float(np.mean([avg_over_dists(res, v, "splits")
                                                      for v in n_values]))),
    ])
    plot_sweep("countmin_fig1_window.png", "Fig. 1: window size", "N", n_values, res, ALGOS)

    # Figure 2: periods
    p_values = [1_000, 16_000] if args.quick else [1_000, 4_000, 16_000, 64_000]
    res = sweep("fig2", "p", p_values, runs, lambda v: {"p": v})
    store("fig2", "p", p_values, res, ALGOS)
    table("Figure 2: period p", "p", p_values, res, ALGOS, [
        ("Splitter max error", "<= 1e3", max(avg_over_dists(res, v, "splitter")
                                             for v in p_values)),
        ("Proportional mean error", "~2e5", float(np.mean(
            [avg_over_dists(res, v, "proportional") for v in p_values]))),
        ("Simple min error", "> 1e6", min(avg_over_dists(res, v, "simple") for v in p_values)),
        ("splits at p=1,000", "166 (mean)", avg_over_dists(res, 1_000, "splits")),
        ("splits at largest p", "<= 7 (p=64k)", avg_over_dists(res, p_values[-1], "splits")),
        ("splits ratio per 4x decrease of p", "3.4x",
         1 / growth(res, p_values, "splits") if not args.quick else "n/a (quick)"),
    ])
    plot_sweep("countmin_fig2_period.png", "Fig. 2: period", "p", p_values, res, ALGOS,
               logx=True)

    # Figure 3: rows
    c_values = [1, 4] if args.quick else [1, 2, 4, 8]
    res = sweep("fig3", "c1", c_values, runs, lambda v: {"depth": v})
    store("fig3", "c1", c_values, res, ALGOS)
    table("Figure 3: rows c1 (w = 2 c1)", "c1", c_values, res, ALGOS, [
        ("Simple min error", ">= 1e5", min(avg_over_dists(res, v, "simple") for v in c_values)),
        ("Proportional mean error", "~8.5e4", float(np.mean(
            [avg_over_dists(res, v, "proportional") for v in c_values]))),
        ("Splitter max error", "<= 513", max(avg_over_dists(res, v, "splitter")
                                             for v in c_values)),
        ("splits growth per 4x c1", "2.4x",
         avg_over_dists(res, 4, "splits") / avg_over_dists(res, 1, "splits")),
    ])
    plot_sweep("countmin_fig3_rows.png", "Fig. 3: rows", "c1", c_values, res, ALGOS)

    # Figures 4 and 6: multi-distribution trace
    series_runs, split_runs = [], []
    for rep in range(runs):
        items = multi_distribution_stream(n=N_ITEMS, w=2, p=15_000, seed=77 + rep)
        series, splits, stops = run_stream(items, N0, 1, seed=rep, checkpoints=430, skip=N0)
        series_runs.append(series)
        split_runs.append(splits)
    mean_series = {a: np.mean([s[a] for s in series_runs], axis=0) for a in ALGOS}
    mean_splits = np.mean(split_runs, axis=0)
    print("\nFigures 4 and 6: multi-distribution trace (m = 480,000, p = 15,000, N = 50,000)")
    print(f"  {'claim':58s} {'paper':>16s} {'ours':>12s}")
    for claim, paper, ours in [
        ("Splitter max error", "<= 5e3", float(mean_series["splitter"].max())),
        ("Splitter mean error", "718", float(mean_series["splitter"].mean())),
        ("Proportional max error", "~2e6", float(mean_series["proportional"].max())),
        ("Proportional mean error", "3e5", float(mean_series["proportional"].mean())),
        ("Simple min error", ">= 5e3", float(mean_series["simple"].min())),
        ("Simple mean error", "2.6e6", float(mean_series["simple"].mean())),
        ("mean splits", "31", float(mean_splits.mean())),
        ("max splits", "66 (bound 560)", float(mean_splits.max())),
    ]:
        print(f"  {claim:58s} {paper:>16s} {ours:12.4g}")
    report["figures"]["fig4_fig6"] = {
        "checkpoints": stops.tolist(), "error": {a: v.tolist() for a, v in mean_series.items()},
        "splits": mean_splits.tolist()}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for a in ALGOS:
        axes[0].plot(stops, mean_series[a], label=a)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("MSE vs Perfect")
    axes[1].plot(stops, mean_splits)
    axes[1].set_ylabel("splits s")
    for ax in axes:
        ax.set_xlabel("samples")
    axes[0].legend()
    fig.suptitle("Fig. 4 and 6: multi-distribution trace")
    fig.tight_layout()
    fig.savefig(RESULTS / "countmin_fig4_fig6_multi.png", dpi=110)
    plt.close(fig)

    # Figure 8: mu
    mu_values = [0.9, 1.5, 2.5] if args.quick else [0.9, 1.0, 1.1, 1.3, 1.5, 2.0, 2.5]
    res = sweep("fig8", "mu", mu_values, runs, lambda v: {"mu": v}, algos=("splitter",))
    store("fig8", "mu", mu_values, res, ("splitter",))
    others = [d for d in DISTS if d != "zipf1"]
    table("Figure 8: Splitter mu (tau = 0.05)", "mu", mu_values, res, ("splitter",), [
        ("Zipf1 error at mu=0.9", "18", res[(0.9, "zipf1")]["splitter"]),
        ("Zipf1 error at mu=2.5", "4,944", res[(2.5, "zipf1")]["splitter"]),
        ("other dists error at mu=0.9", "110", float(np.mean([res[(0.9, d)]["splitter"]
                                                             for d in others]))),
        ("other dists error at mu=2.5", "684", float(np.mean([res[(2.5, d)]["splitter"]
                                                             for d in others]))),
        ("max splits at mu=0.9", "454", max(res[(0.9, d)]["splits"] for d in DISTS)),
        ("mean splits at mu=1.3", "51", avg_over_dists(res, 1.3, "splits")
         if 1.3 in mu_values else "n/a (quick)"),
        ("mean splits at mu=2.5", "20", avg_over_dists(res, 2.5, "splits")),
    ])
    plot_sweep("countmin_fig8_mu.png", "Fig. 8: mu", "mu", mu_values, res, ("splitter",))

    # Figure 9: tau
    tau_values = [0.005, 0.05, 0.5] if args.quick else [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5]
    res = sweep("fig9", "tau", tau_values, runs, lambda v: {"tau": v}, algos=("splitter",))
    store("fig9", "tau", tau_values, res, ("splitter",))
    table("Figure 9: Splitter tau (mu = 1.5)", "tau", tau_values, res, ("splitter",), [
        ("mean error at tau=0.005", "4", avg_over_dists(res, 0.005, "splitter")),
        ("mean error at tau=0.1", "610", avg_over_dists(res, 0.1, "splitter")
         if 0.1 in tau_values else "n/a (quick)"),
        ("mean error at tau=0.5", "12,198", avg_over_dists(res, 0.5, "splitter")),
        ("mean splits at tau=0.005", "1,659", avg_over_dists(res, 0.005, "splits")),
        ("mean splits at tau=0.02", "77", avg_over_dists(res, 0.02, "splits")
         if 0.02 in tau_values else "n/a (quick)"),
        ("mean splits at tau=0.5", "14", avg_over_dists(res, 0.5, "splits")),
        ("splits upper bound c2/tau at tau=0.005 / 0.5", "not stated",
         f"{WIDTH / 0.005:.0f}/{WIDTH / 0.5:.0f}"),
    ])
    plot_sweep("countmin_fig9_tau.png", "Fig. 9: tau", "tau", tau_values, res, ("splitter",),
               logx=True)

    report["seconds"] = time.perf_counter() - started
    (RESULTS / "countmin_paper.json").write_text(json.dumps(report, indent=1))
    print(f"\n{runs} run(s) per point instead of the paper's 100; "
          f"took {report['seconds']:.0f} s; wrote {RESULTS / 'countmin_paper.json'} and PNGs")


if __name__ == "__main__":
    main()
