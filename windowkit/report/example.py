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
from windowkit.techniques import TECHNIQUES, step_functions

#: Markup inside a step name, the title and a predicate: the page must show it as text.
MARKUP = "<b>x</b> & 'y'"
#: The functions whose figure the page carries: those the techniques' examples run with rows
#: and that have a report section.
WITH_FIGURE = tuple(name for t in TECHNIQUES for name in t.example_functions
                    if step_functions()[name].report is not None)


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


class ExampleRun:
    """The example run being built: its tables (Spark DataFrames, by name) and its steps.

    :meth:`add` adds a step: it runs a function's whole output once (checkpointed), splits
    it, counts. Each technique's ``report_example`` adds its own steps.
    """

    def __init__(self, tables: dict[str, Any] | None = None) -> None:
        self.tables: dict[str, Any] = dict(tables or {})
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
    run = ExampleRun({"routers": routers, "bgp": bgp, "flows": flows, "calls": calls})
    for technique in TECHNIQUES:
        if technique.report_example is not None:
            technique.report_example(run)
    run.add("mystery", "not_a_windowkit_function", {"answer": 42},
            {"input": ("flows", flows)}, flows.limit(3))

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
