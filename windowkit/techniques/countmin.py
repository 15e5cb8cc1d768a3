"""Windowed Count-Min: how often did an item occur in the recent window, in small space (the
sketch per shard, merged; estimates and heavy hitters read from it)."""

from __future__ import annotations

from typing import Any

from windowkit.technique import TIMED, SqlSignature, StepFunction, StreamExample, Technique

_SNAPSHOTS = ("windowed_count_min",)
#: The module declaring windowed_count_min's SQL table function.
_SQL = "countmin.snapshots"
#: ... and heavy_hitters'.
_QUERIES = "countmin.queries"


def check_count_min(params: dict[str, Any]) -> None:
    """What windowed_count_min refuses in its parameters, before Spark starts.

    Examples
    --------
    >>> check_count_min({"window": 0})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `window` ...
    """
    from windowkit.spark.countmin import make_operator

    names = ("unit", "tick", "algorithm", "epsilon", "delta", "snapshot_every", "seed", "tau",
             "mu")
    make_operator(params.get("window"), **{k: params[k] for k in names if k in params})


def check_heavy_hitters(params: dict[str, Any]) -> None:
    """What heavy_hitters refuses in its parameters, before Spark starts.

    Examples
    --------
    >>> check_heavy_hitters({"phi": 2})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `phi` ...
    """
    from windowkit.core.validation import check_in_range

    check_in_range("phi", params.get("phi"), 0, 1, low_open=True)


def report_example(run: Any) -> None:
    """Add the Count-Min steps of the report's example run: the busiest sources' sketch (the
    items' order as time) and the heavy sources tested against it."""

    import windowkit.spark as W

    flows = run.tables["flows"]
    params = {"item": "source", "time": "seq", "window": 2000, "algorithm": "perfect",
              "epsilon": 0.05, "delta": 0.25}
    snapshots = run.add("busy sources", "windowed_count_min", params,
                        {"input": ("flows", flows)}, W.windowed_count_min(flows, **params),
                        split=W.split_rejected, reason="rejected")
    run.add("heavy sources", "heavy_hitters", {"phi": 0.04, "item": "source", "latest": True},
            {"input": (snapshots.name, snapshots.result), "candidates": ("flows", flows)},
            W.heavy_hitters(snapshots.result, flows.select("source").distinct(), 0.04,
                            "source", latest=True))


TECHNIQUE = Technique(
    name="countmin",
    question="how often did an item occur in the recent window, in small space?",
    core=("windowkit.core.sketches", "windowkit.core.sketches.operator",
          "windowkit.core.sketches.coordinator"),
    functions=(
        StepFunction("windowed_count_min", "countmin", split="split_rejected", reason="rejected",
                     from_input=TIMED, columns=("item", "time", "by"),
                     durations={"tick": "time", "late": "time"}, check=check_count_min,
                     latest_window=("window", "tick"),
                     report="countmin:count_min_section",
                     sql=SqlSignature(f"{_SQL}:count_min_operator", f"{_SQL}:count_min_inputs",
                                      f"{_SQL}:count_min_columns", valid=f"{_SQL}:count_min_valid",
                                      sites=f"{_SQL}:count_min_sql_sites",
                                      time_unit=f"{_SQL}:count_min_time_unit")),
        StepFunction("heavy_hitters", "countmin",
                     roles=(("snapshots", "input"), ("candidates", "candidates")),
                     batch_only=True, columns=("item",), column_role="candidates",
                     input_from=_SNAPSHOTS, check=check_heavy_hitters,
                     report="countmin:heavy_hitters_section",
                     sql=SqlSignature(f"{_QUERIES}:heavy_hitters_operator",
                                      f"{_QUERIES}:heavy_hitters_inputs",
                                      f"{_QUERIES}:heavy_hitters_columns",
                                      valid=f"{_QUERIES}:heavy_hitters_valid", time="time",
                                      time_unit=f"{_QUERIES}:heavy_hitters_time_unit")),
        StepFunction("estimate_frequency", "countmin",
                     roles=(("sketch", "input"), ("items", "items")), batch_only=True,
                     columns=("item",), column_role="items", input_from=_SNAPSHOTS),
        StepFunction("merge_count_min", "countmin", roles=(("snapshots", "input"),),
                     batch_only=True, input_from=_SNAPSHOTS),
    ),
    helpers={"latest_snapshots": "countmin"},
    cli=("windowkit.cli.countmin",),
    report_example=report_example,
    example_functions=("windowed_count_min", "heavy_hitters"),
    # each site's windowed Count-Min (its matrices, clock and counters) in the shard's state
    stream_example=StreamExample(("countmin", "--item", "router", "--unit", "ticks", "--tick",
                                  "1 minute", "--window", "30", "--algorithm", "proportional"),
                                 ("snapshots", "rejected")),
)
