"""Multi-granular sliding windows: the last minute, 10 minutes and hour of each key at once
(aggregates, distinct counts and recurring items per level)."""

from __future__ import annotations

from typing import Any

from windowkit.technique import KEYED, SqlSignature, StepFunction, StreamExample, Technique


def check_levels(params: dict[str, Any]) -> None:
    """What multi_granular and recurring_items refuse in their parameters, before Spark starts.

    Examples
    --------
    >>> check_levels({"window": "RANGES 1 MINUTE SLIDES 1 MINUTE", "aggregates": ["median"]})
    Traceback (most recent call last):
    ...
    ValueError: `aggregates` must be one of ...
    """
    from windowkit.core.multigranular.aggregator import AGGREGATES, make_spec
    from windowkit.core.multigranular.distinct import check_precision
    from windowkit.core.validation import check_choice

    levels = params.get("levels")
    make_spec(params.get("window"), None if levels is None else [tuple(lv) for lv in levels],
              params.get("origin", 0), params.get("closed", "left"))
    for name in params.get("aggregates", ()):
        check_choice("aggregates", name, AGGREGATES)
    if "distinct_precision" in params:
        check_precision(params["distinct_precision"])


def report_example(run: Any) -> None:
    """Add the multi-granular steps of the report's example run: traffic per source over two
    levels, and recurring protocols."""
    import windowkit.spark as W

    flows = run.tables["flows"]
    reports = {"split": W.split_rejected, "reason": "rejected"}
    params = {"time": "time", "time_unit": "us", "by": "source", "value": "bytes",
              "window": "RANGES 10 MINUTES, 1 MINUTE SLIDES 1 MINUTE, 10 SECONDS",
              "aggregates": ["count", "mean"]}
    run.add("traffic", "multi_granular", params, {"input": ("flows", flows)},
            W.multi_granular(flows, **params), **reports)
    params = {"time": "time", "time_unit": "us", "by": "source", "item": "protocol",
              "window": "RANGES 4 MINUTES, 1 MINUTE SLIDES 1 MINUTE, 30 SECONDS"}
    run.add("recurring protocols", "recurring_items", params, {"input": ("flows", flows)},
            W.recurring_items(flows, **params), **reports)


_STEP = {"module": "multigranular", "split": "split_rejected", "reason": "rejected",
         "from_input": KEYED, "durations": {"late": "time"}, "check": check_levels}

TECHNIQUE = Technique(
    name="multigranular",
    question="what did the last minute, 10 minutes and hour look like, at once?",
    core=("windowkit.core.multigranular",),
    functions=(
        StepFunction("multi_granular", columns=("time", "by", "value", "distinct"),
                     report="multigranular:multi_granular_section",
                     # (the raw rows, as on a stream; the distinct count's items are text)
                     sql=SqlSignature("multigranular:multi_granular_operator",
                                      {"value": "value", "item": "distinct"},
                                      "multigranular:report_columns", defaults={"value": "0.0"},
                                      valid="multigranular:reports_valid_sql"),
                     **_STEP),
        StepFunction("recurring_items", columns=("time", "item", "by"),
                     report="multigranular:recurring_items_section",
                     sql=SqlSignature("multigranular:recurring_operator", {"item": "item"},
                                      "multigranular:report_columns",
                                      valid="multigranular:recurring_valid_sql"),
                     **_STEP),
    ),
    helpers={"split_reports": "multigranular"},
    cli=("windowkit.cli.multigranular",),
    report_example=report_example,
    example_functions=("multi_granular", "recurring_items"),
    # the multi-granular chains keep their cells in each shard's state
    stream_example=StreamExample(("multigranular", "--value", "loss_rate", "--window",
                                  "RANGES 10 MINUTES, 5 MINUTES SLIDES 5 MINUTES, 1 MINUTE"),
                                 ("reports", "rejected")),
)
