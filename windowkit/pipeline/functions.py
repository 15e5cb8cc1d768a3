"""The windowkit functions a pipeline step may call, and how each one's parameters are checked.

A step names a function of :mod:`windowkit.spark` and gives its keyword parameters. The
parameters a function accepts, their types and which ones are required are read from the
function's own signature (so a new parameter needs no change here); pydantic checks a step's
table against them, and duration parameters are parsed the way the function will parse them.
What differs between functions (which parameters are DataFrames, where rejected rows go, which
parameters default to the input's time and key column, which hold durations) is declared once
per function, as a :class:`~windowkit.technique.StepFunction` in its technique's descriptor
(:mod:`windowkit.techniques`).
"""

from __future__ import annotations

import inspect
import typing
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from windowkit.technique import StepFunction
from windowkit.techniques import step_functions

#: Every function a step may call, by name, from the techniques' descriptors.
FUNCTIONS: dict[str, StepFunction] = step_functions()

#: Step-table keys that are not parameters of the function.
STEP_KEYS = ("function", "description")

#: What a step given as ``sql = "..."`` is called in place of a function (in its progress
#: lines and the report), and the keys its table takes.
SQL_STEP = "sql"
SQL_STEP_KEYS = ("sql", "description")

#: How a ``sql`` step's rows are treated, declared as a function's are: split as a windowkit
#: function's when they carry its ``rejected`` and ``detail`` columns (a ``SELECT *`` of a
#: windowkit table function), written as they are otherwise (see the runner's
#: ``split_result``). Its inputs are the tables its query names, not roles.
QUERY = StepFunction(SQL_STEP, "sql", roles=(), split="split_rejected", reason="rejected")


def declaration(function: str) -> StepFunction:
    """What a step calling ``function`` declares: its function's, or :data:`QUERY`'s for a
    ``sql`` step.

    Examples
    --------
    >>> declaration("threshold_frames").batch_only, declaration(SQL_STEP).roles
    (False, ())
    """
    return QUERY if function == SQL_STEP else FUNCTIONS[function]


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


__all__ = ["FUNCTIONS", "QUERY", "SQL_STEP", "SQL_STEP_KEYS", "STEP_KEYS", "StepFunction",
           "accepted_parameters", "declaration", "parameter_model"]
