"""A small example run with a step of every function the report draws, for its tests.

:func:`example_run` runs each windowkit Spark function once on a small generated data set
(router loss rates, BGP messages, connection records, system calls), checkpointed so that the
report's queries do not run it again, and returns the :class:`RunSummary` a pipeline run would
give: results with rejected rows removed, rejected counts by reason. It also holds an empty
result, two functions without a figure and one result that is not what its function gives.

To look at the page::

    python -m windowkit.report.example out/example-report.html
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from windowkit.report.model import RunSummary, SourceRun, StepRun

#: Markup inside a step name, the title and a predicate: the page must show it as text.
MARKUP = "<b>x</b> & 'y'"
#: Steps whose figure the page carries.
WITH_FIGURE = ("threshold_frames", "delta_frames", "fill_frames", "multi_granular",
               "recurring_items", "windowed_count_min", "heavy_hitters", "persistent_items",
               "exact_persistent_items", "widen_detect")


def example_tables(seed: int = 2) -> dict[str, pd.DataFrame]:
    """The example's four tables, small: ``routers``, ``bgp``, ``flows``, ``calls``.

    Examples
    --------
    >>> tables = example_tables()
    >>> sorted(tables), list(tables["flows"].columns)[-1]
    (['bgp', 'calls', 'flows', 'routers'], 'seq')
    """
    from windowkit.datasets.connections import connection_records
    from windowkit.datasets.routers import router_readings
    from windowkit.datasets.syscalls import case_study

    routers = router_readings(n_routers=3, duration="3 hours", seed=seed, mean_gap=60)
    rng = np.random.default_rng(seed)
    t0, t1 = routers["time"].min(), routers["time"].max()
    n = 600
    bgp = pd.DataFrame({
        "router": rng.choice(sorted(routers["router"].unique()), n),
        "time": t0 + pd.to_timedelta(rng.uniform(0, (t1 - t0).total_seconds(), n), unit="s"),
        "kind": rng.choice(["UPDATE", "WITHDRAW"], n)})
    flows = connection_records(duration=900.0, rate=8.0, n_sources=25, n_destinations=80,
                               seed=seed)
    flows["seq"] = np.arange(len(flows), dtype=np.int64)  # the items' order, for Count-Min
    cs = case_study(n_events=3000, n_attacks=4, n_decoys=2, max_duration=500, seed=1)
    calls = cs.events.astype({c: object for c in ("call", "fd", "exe", "ret")})
    calls["time"] = pd.to_datetime(calls["time"], unit="us")
    return {"routers": routers, "bgp": bgp, "flows": flows, "calls": calls}


class _Run:
    """Adds steps: runs a function's whole output once (checkpointed), splits it, counts."""

    def __init__(self) -> None:
        self.steps: list[StepRun] = []

    def add(self, name: str, function: str, params: dict[str, Any], inputs: dict[str, tuple],
            output, split: Callable | None = None, reason: str | None = None,
            inherited: dict[str, Any] | None = None) -> StepRun:
        from pyspark.sql import functions as F

        output = output.localCheckpoint()
        result, rejected = split(output) if split is not None else (output, None)
        counts: dict[str, int] = {}
        if rejected is not None:
            counts = {r[0]: r[1] for r in rejected.groupBy(reason).agg(
                F.count(F.lit(1))).collect()}
        step = StepRun(name, function, params, {k: v[1] for k, v in inputs.items()},
                       {k: v[0] for k, v in inputs.items()}, result, counts, result.count(),
                       0.5, f"out/{name}", inherited or {})
        self.steps.append(step)
        return step


def example_run(spark) -> RunSummary:
    """The example run (see the module docstring); its DataFrames live in ``spark``.

    It runs about fifteen small Spark jobs (half a minute here), so its use is shown, not
    run, here::

        run = example_run(spark)
        write_report(run, "example-report.html")
    """
    from pyspark.sql import functions as F

    import windowkit.spark as W

    tables = example_tables()
    routers = spark.createDataFrame(tables["routers"].assign(time=_naive(tables["routers"])),
                                    "router string, time timestamp, loss_rate double")
    routers = routers.unionByName(spark.createDataFrame(
        [("r000", None, 0.5), ("r001", None, 0.1)], routers.schema))  # two without a time
    bgp = spark.createDataFrame(tables["bgp"].assign(time=_naive(tables["bgp"])),
                                "router string, time timestamp, kind string")
    flows = spark.createDataFrame(tables["flows"])
    calls = spark.createDataFrame(tables["calls"], "key long, time timestamp, call string, "
                                                   "fd string, exe string, ret string")
    run = _Run()
    framed = {"split": W.split_rejected, "reason": "status"}

    when = f"loss_rate > 0.003 AND router <> '{MARKUP.replace(chr(39), '')}'"
    loss = run.add(f"loss {MARKUP}", "threshold_frames",
                   {"when": when, "min_duration": "1 minute"}, {"input": ("routers", routers)},
                   W.threshold_frames(routers, "time", when, by="router",
                                      min_duration="1 minute", late=None),
                   inherited={"time": "time", "by": "router"}, **framed)
    seconds = routers.withColumn("t", F.unix_seconds("time")).drop("time")
    params = {"time": "t", "time_unit": "s", "by": "router", "value": "loss_rate", "x": 0.002}
    run.add("drift", "delta_frames", params, {"input": ("routers", seconds)},
            W.delta_frames(seconds, late=None, **params), **framed)

    params = {"time": "time", "by": "router", "before": "2 minutes", "after": "1 minute"}
    run.add("loss with bgp", "fill_frames", params,
            {"input": (loss.name, loss.result), "data": ("bgp", bgp)},
            W.fill_frames(loss.result, bgp, **params))

    reports = {"split": W.split_reports, "reason": "rejected"}
    params = {"time": "time", "time_unit": "us", "by": "source", "value": "bytes",
              "window": "RANGES 10 MINUTES, 1 MINUTE SLIDES 1 MINUTE, 10 SECONDS",
              "aggregates": ["count", "mean"]}
    run.add("traffic", "multi_granular", params, {"input": ("flows", flows)},
            W.multi_granular(flows, **params), **reports)
    params = {"time": "time", "time_unit": "us", "by": "source", "item": "protocol",
              "window": "RANGES 4 MINUTES, 1 MINUTE SLIDES 1 MINUTE, 30 SECONDS"}
    run.add("recurring protocols", "recurring_items", params, {"input": ("flows", flows)},
            W.recurring_items(flows, **params), **reports)

    params = {"item": "source", "time": "seq", "window": 2000, "algorithm": "perfect",
              "epsilon": 0.05, "delta": 0.25}
    snapshots = run.add("busy sources", "windowed_count_min", params,
                        {"input": ("flows", flows)}, W.windowed_count_min(flows, **params),
                        split=lambda out: (out.filter(F.col("rejected").isNull()),
                                           out.filter(F.col("rejected").isNotNull())),
                        reason="rejected")
    run.add("heavy sources", "heavy_hitters", {"phi": 0.04, "item": "source", "latest": True},
            {"input": (snapshots.name, snapshots.result), "candidates": ("flows", flows)},
            W.heavy_hitters(snapshots.result, flows.select("source").distinct(), 0.04,
                            "source", latest=True))

    persistent = {"split": W.split_persistent, "reason": "status"}
    params = {"item": "source", "time": "time", "time_unit": "us", "slot": "30 seconds",
              "window_slots": 10, "alpha": 0.5, "epsilon": 0.2}
    run.add("persistent sources", "persistent_items", params, {"input": ("flows", flows)},
            W.persistent_items(flows, late=None, **params), **persistent)
    params = {k: v for k, v in params.items() if k != "epsilon"}
    run.add("persistent sources, exact", "exact_persistent_items", params,
            {"input": ("flows", flows)}, W.exact_persistent_items(flows, **params), **persistent)

    params = {"time": "time", "by": "key", "base": "4 seconds", "max_length": 16,
              "max_duration": "20 minutes"}
    run.add("remote shells", "widen_detect", params, {"input": ("calls", calls)},
            W.widen_detect(calls, late=None, **params), split=W.split_detections,
            reason="rejected")

    # what threshold_frames gives when nothing holds, without running it again
    run.add("no frames", "threshold_frames", {"time": "time", "when": "loss_rate > 5",
                                              "by": "router"},
            {"input": ("routers", routers)}, loss.result.limit(0))
    run.add("mystery", "not_a_windowkit_function", {"answer": 42},
            {"input": ("flows", flows)}, flows.limit(3))
    run.add("broken", "widen_detect", {"time": "time"}, {"input": ("calls", calls)},
            spark.range(2))

    keys = {"routers": "router", "bgp": "router", "calls": "key"}
    sources = [SourceRun(name, f"data/{name}.parquet", "parquet", rows=len(table),
                         time="time", key=keys.get(name))
               for name, table in tables.items()]
    sources[0].rows += 2  # the two rows without a time
    return RunSummary(f"example run {MARKUP}", "pipelines/example.toml", "local[2]", "batch",
                      sources, run.steps, "out/rejected", 12.5)


def _naive(table: pd.DataFrame) -> pd.Series:
    """UTC times without their zone, in µs (the session's time zone is UTC)."""
    return table["time"].dt.tz_convert("UTC").dt.tz_localize(None).astype("datetime64[us]")


def _main(argv: list[str] | None = None) -> int:
    """Write the example run's report to the path given (default ``example-report.html``)."""
    from windowkit.report import write_report
    from windowkit.spark.session import windowkit_session

    args = sys.argv[1:] if argv is None else argv
    path = args[0] if args else "example-report.html"
    spark = windowkit_session("local[2]", app_name="windowkit report example", quiet=True)
    try:
        print(os.path.abspath(write_report(example_run(spark), path)))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main())
