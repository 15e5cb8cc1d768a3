"""Persistent items: which items keep coming back, however rarely (the sketch and the exact
count, over fixed or sliding windows of slots)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from windowkit.technique import TIMED, SqlSignature, StepFunction, Technique


def persistent_check(exact: bool) -> Callable[[dict[str, Any]], None]:
    """What persistent_items (``exact``: exact_persistent_items) refuses in its parameters,
    before Spark starts.

    Examples
    --------
    >>> persistent_check(exact=True)({"alpha": 2})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `alpha` ...
    """
    def check(params: dict[str, Any]) -> None:
        from windowkit.spark.persistent import _check

        _check(params.get("slot", "30 seconds"), params.get("window_slots", 100),
               params.get("alpha", 0.5), None if exact else params.get("epsilon", 0.1),
               params.get("sliding", True))

    return check


def report_example(run: Any) -> None:
    """Add the persistent-items steps of the report's example run: the sketch's persistent
    sources, and the exact ones."""
    import windowkit.spark as W

    flows = run.tables["flows"]
    persistent = {"split": W.split_rejected, "reason": "rejected"}
    params = {"item": "source", "time": "time", "time_unit": "us", "slot": "30 seconds",
              "window_slots": 10, "alpha": 0.5, "epsilon": 0.2}
    run.add("persistent sources", "persistent_items", params, {"input": ("flows", flows)},
            W.persistent_items(flows, late=None, **params), **persistent)
    params = {k: v for k, v in params.items() if k != "epsilon"}
    run.add("persistent sources, exact", "exact_persistent_items", params,
            {"input": ("flows", flows)}, W.exact_persistent_items(flows, **params), **persistent)


_STEP = {"module": "persistent", "split": "split_rejected", "reason": "rejected",
         "from_input": TIMED, "columns": ("item", "time"),
         "durations": {"slot": "time", "late": "time"}, "latest_window": ("window_slots", "slot"),
         "report": "persistent:persistent_section"}

TECHNIQUE = Technique(
    name="persistent",
    question="which items keep coming back, however rarely?",
    core=("windowkit.core.persistence", "windowkit.core.persistence.operator"),
    functions=(
        StepFunction("persistent_items", check=persistent_check(exact=False),
                     sql=SqlSignature("persistent:persistent_operator", {"item": "item"},
                                      "persistent:persistent_columns"), **_STEP),
        StepFunction("exact_persistent_items", check=persistent_check(exact=True),
                     sql=SqlSignature("persistent:exact_persistent_operator", {"item": "item"},
                                      "persistent:persistent_columns"), **_STEP),
    ),
    helpers={"split_persistent": "persistent"},
    cli=("windowkit.cli.persistent",),
    report_example=report_example,
    example_functions=("persistent_items", "exact_persistent_items"),
)
