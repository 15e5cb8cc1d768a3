"""Issue 35, point 4: one descriptor per technique, and every tool finds techniques in it.

Each descriptor of :mod:`windowkit.techniques` must have every part a technique has: Spark
functions that exist, a CLI subcommand, a report section, a report example, a case of the
session-kinds suite calling each of its functions, and registered stateful core classes.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import pathlib
import re
import subprocess
import sys

import pytest

import windowkit.spark
from windowkit.core.registry import state_classes
from windowkit.technique import Technique
from windowkit.techniques import TECHNIQUES, spark_modules, step_functions

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _session_kinds_sources() -> list[str]:
    from tests.session_kinds import CASES

    return [inspect.getsource(case) for case in CASES.values()]


def _spark_function(name: str, module: str) -> object | None:
    try:
        return getattr(importlib.import_module(f"windowkit.spark.{module}"), name)
    except (ImportError, AttributeError):
        return None


def _subcommands(module_path: str) -> set[str] | None:
    """The subcommands a CLI module registers, or None if it has no ``register``."""
    try:
        register = importlib.import_module(module_path).register
    except (ImportError, AttributeError):
        return None
    subparsers = argparse.ArgumentParser().add_subparsers()
    register(subparsers)
    return set(subparsers.choices)


def _imports(module_path: str) -> bool:
    try:
        importlib.import_module(module_path)
    except ImportError:
        return False
    return True


def missing_parts(technique: Technique) -> list[str]:
    """What ``technique`` lacks of what every technique has (empty: nothing)."""
    missing = []
    names = {f.name for f in technique.functions}
    if not names:
        missing.append("Spark functions")
    for name, module in technique.spark_modules().items():
        if not callable(_spark_function(name, module)):
            missing.append(f"Spark function {name} in windowkit.spark.{module}")
    if not technique.cli:
        missing.append("CLI module")
    for path in technique.cli:
        if not _subcommands(path):
            missing.append(f"CLI module {path} registering a subcommand")
    sections = [f for f in technique.functions if f.report is not None]
    if not sections:
        missing.append("report section")
    for function in sections:
        try:
            function.report_builder()
        except (ImportError, AttributeError):
            missing.append(f"report builder windowkit.report.{function.report}")
    if technique.report_example is None or not technique.example_functions:
        missing.append("report example")
    for name in sorted(set(technique.example_functions) - names):
        missing.append(f"report example function {name} among its functions")
    sources = _session_kinds_sources()
    for name in sorted(names):
        if not any(re.search(rf"\b{name}\(", source) for source in sources):
            missing.append(f"session-kinds case calling {name}")
    if not technique.core or not all(_imports(m) for m in technique.core):
        missing.append(f"core packages {technique.core}")
    own = [cls for cls in state_classes().values()
           if any(cls.__module__.startswith(m) for m in technique.core)]
    if not own:
        missing.append("registered stateful core class")
    return missing


@pytest.mark.parametrize("technique", TECHNIQUES, ids=[t.name for t in TECHNIQUES])
def test_every_technique_has_every_part_issue35(technique):
    assert missing_parts(technique) == []


def test_a_technique_lacking_a_part_is_named_issue35():
    frames = next(t for t in TECHNIQUES if t.name == "frames")
    functions = (dataclasses.replace(frames.functions[0], report="frames:no_such_section"),
                 dataclasses.replace(frames.functions[1], name="no_such_frames"))
    broken = dataclasses.replace(frames, functions=functions, cli=("windowkit.cli.no_such",),
                                 report_example=None, helpers={}, core=("windowkit.core.nope",))
    assert missing_parts(broken) == [
        "Spark function no_such_frames in windowkit.spark.framings",
        "CLI module windowkit.cli.no_such registering a subcommand",
        "report builder windowkit.report.frames:no_such_section",
        "report example",
        "report example function delta_frames among its functions",
        "report example function fill_frames among its functions",
        "session-kinds case calling no_such_frames",
        "core packages ('windowkit.core.nope',)",
        "registered stateful core class",
    ]


def test_a_function_belongs_to_one_technique_issue35():
    owners = [name for t in TECHNIQUES for name in t.spark_modules()]
    assert len(owners) == len(set(owners))
    assert len({t.name for t in TECHNIQUES}) == len(TECHNIQUES)


def test_every_public_function_of_windowkit_spark_is_owned_issue35():
    owned = set(spark_modules()) | set(windowkit.spark._SHARED)
    assert set(windowkit.spark.__all__) == owned
    for name in windowkit.spark.__all__:
        assert callable(getattr(windowkit.spark, name)), name
    # a module's own list of its public functions names no function left out of windowkit.spark
    for module in sorted(set(spark_modules().values())):
        found = importlib.import_module(f"windowkit.spark.{module}")
        public = [n for n in getattr(found, "__all__", ()) if inspect.isfunction(getattr(found, n))]
        assert set(public) <= owned, (module, set(public) - owned)


def test_the_readme_table_lists_exactly_the_techniques_functions_issue35():
    table = [line for line in (ROOT / "README.md").read_text().splitlines()
             if line.startswith("| [")]
    assert len(table) == len(TECHNIQUES)
    named = {n for line in table for n in re.findall(r"`([a-z_]+)`", line)}
    assert named == set(step_functions())


def test_the_tools_find_every_technique_issue35():
    from windowkit.cli import build_parser
    from windowkit.pipeline.functions import FUNCTIONS
    from windowkit.report.steps import FUNCTIONS as REPORTED

    commands = set(build_parser()._subparsers._group_actions[0].choices)
    for technique in TECHNIQUES:
        for path in technique.cli:
            assert _subcommands(path) <= commands
        for function in technique.functions:
            assert FUNCTIONS[function.name] is function
            assert REPORTED[function.name] is function


def test_reading_the_descriptors_and_building_the_cli_leave_pyspark_out_issue35():
    code = ("import sys, windowkit.techniques, windowkit.cli\n"
            "windowkit.cli.build_parser()\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"
