"""windowkit's techniques, one descriptor module each, found by listing this package.

Each module here holds one :class:`~windowkit.technique.Technique` as ``TECHNIQUE``: a new
technique is a new module, and the command line, the pipeline, the report, the exports of
:mod:`windowkit.spark` and the tests find it. Importing this package imports the descriptors
alone (neither Spark nor the techniques' code).

>>> [t.name for t in TECHNIQUES]
['countmin', 'frames', 'multigranular', 'persistent', 'widening']
"""

from __future__ import annotations

import importlib
import pkgutil

from windowkit.technique import StepFunction, Technique


def _discover() -> tuple[Technique, ...]:
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        technique = getattr(module, "TECHNIQUE", None)
        if not isinstance(technique, Technique):
            msg = f"{module.__name__} holds no Technique as TECHNIQUE"
            raise TypeError(msg)
        found.append(technique)
    return tuple(found)


#: Every technique, in the order of their descriptor modules' names.
TECHNIQUES: tuple[Technique, ...] = _discover()


def step_functions() -> dict[str, StepFunction]:
    """Every function a pipeline step may call, by name.

    Examples
    --------
    >>> step_functions()["multi_granular"].module
    'multigranular'
    """
    return {f.name: f for t in TECHNIQUES for f in t.functions}


def spark_modules() -> dict[str, str]:
    """Every technique's public Spark function -> its module under ``windowkit.spark``.

    Examples
    --------
    >>> spark_modules()["split_detections"]
    'widening'
    """
    return {name: module for t in TECHNIQUES for name, module in t.spark_modules().items()}


def core_modules() -> tuple[str, ...]:
    """Every technique's core packages and modules whose stateful classes register.

    Examples
    --------
    >>> "windowkit.core.multigranular" in core_modules()
    True
    """
    return tuple(module for t in TECHNIQUES for module in t.core)


def cli_modules() -> tuple[str, ...]:
    """Every technique's command-line modules.

    Examples
    --------
    >>> "windowkit.cli.widen" in cli_modules()
    True
    """
    return tuple(module for t in TECHNIQUES for module in t.cli)


__all__ = ["TECHNIQUES", "cli_modules", "core_modules", "spark_modules", "step_functions"]
