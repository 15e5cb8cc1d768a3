"""The windowkit functions a pipeline step may call, and how each one's parameters are checked.

A step names a function of :mod:`windowkit.spark` and gives its keyword parameters. The
parameters a function accepts, their types and which ones are required are read from the
function's own signature (so a new parameter needs no change here); pydantic checks a step's
table against them, and duration parameters are parsed the way the function will parse them.
What differs between functions (which parameters are DataFrames, where rejected rows go, which
parameters default to the input's time and key column) is declared once per function below.
"""

from __future__ import annotations

import importlib
import inspect
import typing
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model


@dataclass(frozen=True)
class StepFunction:
    """How the runner calls one windowkit function.

    Attributes
    ----------
    name : str
        The function's name in :mod:`windowkit.spark`.
    module : str
        Its module under ``windowkit.spark``.
    roles : tuple of (parameter, key) pairs
        The DataFrame parameters and the step-table key naming the source or step for each
        (``input`` first).
    split : str or None
        The function of :mod:`windowkit.spark` splitting a result into (rows, rejected rows),
        or ``"reason"``: rows whose ``reason`` column is null are results; None: nothing is
        rejected.
    reason : str or None
        The column of a rejected row holding why (``"malformed"``, ``"late"``).
    from_input : dict
        Parameter -> (role, attribute of that input: ``time``, ``key``, ``time_unit``,
        ``watermark``), used when the step does not give the parameter.
    columns : tuple of str
        Parameters naming a column of the ``column_role`` input (checked before Spark starts).
    column_role : str
        The input whose columns ``columns`` name (``input``; ``data`` for fill_frames).
    input_from : tuple of str
        The functions whose output the ``input`` must be (empty: any source or step).
    predicates : tuple of str
        Parameters holding a SQL predicate over the ``input`` (checked once Spark is up).
    batch_only : bool
        Whether the function needs the whole input (a batch DataFrame): in a streaming run it
        runs once the streams have stopped, over what they wrote.
    """

    name: str
    module: str
    roles: tuple[tuple[str, str], ...] = (("df", "input"),)
    split: str | None = None
    reason: str | None = None
    from_input: dict[str, tuple[str, str]] = field(default_factory=dict)
    columns: tuple[str, ...] = ()
    predicates: tuple[str, ...] = ()
    batch_only: bool = False
    column_role: str = "input"
    input_from: tuple[str, ...] = ()

    @property
    def role_keys(self) -> tuple[str, ...]:
        """The step-table keys that name inputs (``input``, and ``data`` for fill_frames)."""
        return tuple(key for _, key in self.roles)

    def callable(self):
        """The function itself (imports its Spark module)."""
        return getattr(importlib.import_module(f"windowkit.spark.{self.module}"), self.name)


_TIMED = {"time": ("input", "time"), "time_unit": ("input", "time_unit"),
          "late": ("input", "watermark")}
_KEYED = {**_TIMED, "by": ("input", "key")}
_FRAMES = {"module": "framings", "split": "split_rejected", "reason": "status",
           "from_input": _KEYED}
FRAME_FUNCTIONS = ("threshold_frames", "boundary_frames", "delta_frames", "aggregate_frames",
                   "custom_frames")

FUNCTIONS: dict[str, StepFunction] = {f.name: f for f in (
    StepFunction("threshold_frames", "frames", split="split_rejected", reason="status",
                 from_input=_KEYED, columns=("time", "by"), predicates=("when",)),
    StepFunction("boundary_frames", columns=("time", "by", "value"), **_FRAMES),
    StepFunction("delta_frames", columns=("time", "by", "value"), **_FRAMES),
    StepFunction("aggregate_frames", columns=("time", "by", "value"), **_FRAMES),
    StepFunction("custom_frames", columns=("time", "by", "value"), **_FRAMES),
    StepFunction("longest_frame", "framings", roles=(("frames", "input"),),
                 from_input={"by": ("input", "key")}, batch_only=True,
                 input_from=FRAME_FUNCTIONS),
    StepFunction("fill_frames", "fill", roles=(("frames", "input"), ("data", "data")),
                 split="split_filled", reason="rejected",
                 from_input={"time": ("data", "time"), "by": ("data", "key"),
                             "time_unit": ("data", "time_unit"), "late": ("data", "watermark")},
                 columns=("time", "by"), column_role="data", input_from=FRAME_FUNCTIONS),
    StepFunction("multi_granular", "multigranular", split="split_reports", reason="rejected",
                 from_input=_KEYED, columns=("time", "by", "value", "distinct")),
    StepFunction("recurring_items", "multigranular", split="split_reports", reason="rejected",
                 from_input=_KEYED, columns=("time", "item", "by")),
    StepFunction("windowed_count_min", "countmin", split="reason", reason="rejected",
                 from_input=_TIMED, columns=("item", "time", "by")),
    StepFunction("heavy_hitters", "countmin",
                 roles=(("snapshots", "input"), ("candidates", "candidates")), batch_only=True,
                 columns=("item",), column_role="candidates",
                 input_from=("windowed_count_min",)),
    StepFunction("estimate_frequency", "countmin", roles=(("sketch", "input"), ("items", "items")),
                 batch_only=True, columns=("item",), column_role="items",
                 input_from=("windowed_count_min",)),
    StepFunction("merge_count_min", "countmin", roles=(("snapshots", "input"),),
                 batch_only=True, input_from=("windowed_count_min",)),
    StepFunction("persistent_items", "persistent", split="split_persistent", reason="status",
                 from_input=_TIMED, columns=("item", "time")),
    StepFunction("exact_persistent_items", "persistent", split="split_persistent",
                 reason="status", from_input=_TIMED, columns=("item", "time")),
    StepFunction("widen_detect", "widening", split="split_detections", reason="rejected",
                 from_input=_KEYED, columns=("time", "by")),
)}

#: Step-table keys that are not parameters of the function.
STEP_KEYS = ("function", "description")

#: Parameters holding a duration, parsed as the function will (rows allowed where marked).
DURATION_PARAMS: dict[str, bool] = {
    "min_duration": True, "fragment_every": True, "schedule": False, "late": False,
    "before": False, "after": False, "bucket": False, "max_frame_length": False,
    "base": False, "max_duration": False, "slot": False, "tick": False,
}
#: Duration parameters for which zero has a meaning of its own (fill_frames: no reach).
ZERO_DURATIONS = ("before", "after")


def _multi_granular_levels(params: dict[str, Any]) -> None:
    from windowkit.core.multigranular.aggregator import AGGREGATES, make_spec
    from windowkit.core.multigranular.distinct import check_precision
    from windowkit.core.validation import check_choice

    levels = params.get("levels")
    make_spec(params.get("window"), None if levels is None else [tuple(lv) for lv in levels],
              params.get("origin", 0))
    for name in params.get("aggregates", ()):
        check_choice("aggregates", name, AGGREGATES)
    if "distinct_precision" in params:
        check_precision(params["distinct_precision"])


def _count_min(params: dict[str, Any]) -> None:
    from windowkit.spark.countmin import make_operator

    names = ("unit", "tick", "algorithm", "epsilon", "delta", "snapshot_every", "seed", "tau",
             "mu")
    make_operator(params.get("window"), **{k: params[k] for k in names if k in params})


def _persistent(exact: bool):
    def check(params: dict[str, Any]) -> None:
        from windowkit.spark.persistent import _check

        _check(params.get("slot", "30 seconds"), params.get("window_slots", 100),
               params.get("alpha", 0.5), None if exact else params.get("epsilon", 0.1),
               params.get("sliding", True))

    return check


def _widening(params: dict[str, Any]) -> None:
    from windowkit.core.widening.config import WideningConfig
    from windowkit.core.widening.episode_detector import EpisodeDetector

    WideningConfig.create(**{k: params[k] for k in ("base", "max_length", "max_duration",
                                                    "levels", "report") if k in params})
    EpisodeDetector(params.get("detector", "remote-shell"))


def _heavy_hitters(params: dict[str, Any]) -> None:
    from windowkit.core.validation import check_in_range

    check_in_range("phi", params.get("phi"), 0, 1, low_open=True)


def _fill(params: dict[str, Any]) -> None:
    statuses = params.get("statuses", ("final",))
    wrong = [s for s in statuses if s not in ("partial", "final")]
    if wrong:
        msg = f"`statuses` holds frame statuses 'partial' and 'final'; got {wrong[0]!r}"
        raise ValueError(msg)


#: Checks of the engine-free core run on a step's parameters before Spark starts (beyond
#: types and durations): they raise the same ``ValueError`` the function would.
CORE_CHECKS = {"multi_granular": _multi_granular_levels, "recurring_items": _multi_granular_levels,
               "windowed_count_min": _count_min, "persistent_items": _persistent(False),
               "exact_persistent_items": _persistent(True), "widen_detect": _widening,
               "heavy_hitters": _heavy_hitters, "fill_frames": _fill}


class _Namespace(dict):
    """Names an annotation may use: the module's own, with Spark types read as TOML values."""

    def __missing__(self, name: str) -> Any:
        return Any


def _annotation(hint: str, module_globals: dict) -> Any:
    names = _Namespace(module_globals)
    names.update({"str": str, "int": int, "float": float, "bool": bool, "list": list,
                  "tuple": tuple, "dict": dict, "Column": str, "DataFrame": Any,
                  "Duration": str, "dt": _DtTypes, "Mapping": dict, "Sequence": list,
                  "Framing": str, "Detector": str, "CountMin": Any,
                  "Literal": typing.Literal, "Any": Any})
    try:
        value = eval(hint, {"__builtins__": {}}, names)  # noqa: S307 - our own signatures
    except Exception:
        return Any
    return Any if value in (Any, None) or isinstance(value, type(typing)) else value


class _DtTypes:
    timedelta = str
    datetime = str


@cache
def parameter_model(name: str) -> type[BaseModel]:
    """The pydantic model of a function's keyword parameters (DataFrame ones left out).

    Examples
    --------
    >>> model = parameter_model("threshold_frames")
    >>> sorted(n for n, f in model.model_fields.items() if f.is_required())
    ['time', 'when']
    >>> "missing" in model.model_fields and "df" not in model.model_fields
    True
    """
    function = FUNCTIONS[name]
    target = function.callable()
    module_globals = vars(inspect.getmodule(target))
    roles = {param for param, _ in function.roles}
    fields: dict[str, Any] = {}
    for param in inspect.signature(target).parameters.values():
        if param.name in roles or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        hint = param.annotation if isinstance(param.annotation, str) else "Any"
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (_annotation(hint, module_globals), default)
    return create_model(f"{name}_parameters",
                        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True),
                        **fields)


def accepted_parameters(name: str) -> list[str]:
    """The parameters a step calling ``name`` may give, sorted.

    Examples
    --------
    >>> accepted_parameters("longest_frame")
    ['by']
    """
    return sorted(parameter_model(name).model_fields)


__all__ = ["CORE_CHECKS", "DURATION_PARAMS", "FUNCTIONS", "STEP_KEYS", "ZERO_DURATIONS",
           "StepFunction", "accepted_parameters", "parameter_model"]
