"""Spark's Python daemon, starting its workers with what windowkit's tasks import.

PySpark's daemon (one per executor and set of worker environment variables; windowkit's
session gives every kind of worker the same ones) forks a Python worker per task slot, and
each new worker imported pandas, pyarrow, PySpark's Arrow serializers and windowkit with numba
before its first row. The PySpark modules came from the ``pyspark.zip`` Spark puts first on a
worker's path, which holds no bytecode, so every new process compiled them again (0.5 s of the
0.8 s it took to import them). This daemon imports PySpark from the installed package instead
(same code: the zip is a file inside it) and imports the rest once, before forking, so that
every worker starts with them. Measured on the multi-granular streaming benchmark's query (10
files of 1 M rows, ``local[2]``): first micro-batch 8.9 -> 8.2 s, whole query 25.5 -> 24.5 s.

:func:`windowkit.spark.windowkit_session` uses it in local mode only (an executor elsewhere
may lack windowkit, or have another PySpark). Best effort: a module that cannot be imported
here is imported by the worker that needs it, as before.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys

PRELOADED = (
    "pandas",
    "pyarrow",
    "pyspark.worker",
    "pyspark.sql.pandas.serializers",
    "pyspark.sql.pandas.types",
    "pyspark.sql.streaming.stateful_processor",
    "pyspark.sql.streaming.stateful_processor_api_client",
    "windowkit.spark.adapter",
)


def preload(modules: tuple[str, ...] = PRELOADED) -> list[str]:
    """Import ``modules``; return those that could not be imported.

    Examples
    --------
    >>> preload(("json", "no_such_module_here"))
    ['no_such_module_here']
    """
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a worker imports what it needs itself
            missing.append(name)
    return missing


def prefer_installed_pyspark(path: list[str] | None = None) -> list[str]:
    """Drop from ``path`` (default: ``sys.path``) the ``pyspark.zip`` and py4j archives of
    the installed pyspark.

    Spark puts the archives its own distribution ships first on a worker's path. For a
    pip-installed pyspark those are files inside the installed package, so the package itself
    holds the same code, with bytecode cached: imported from it, PySpark's modules are not
    compiled again by every new Python process. Returns the entries removed.

    Examples
    --------
    >>> import pyspark, os
    >>> lib = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib")
    >>> path = [os.path.join(lib, "pyspark.zip"), "/elsewhere/pyspark.zip", "/x"]
    >>> [os.path.basename(p) for p in prefer_installed_pyspark(path)], path
    (['pyspark.zip'], ['/elsewhere/pyspark.zip', '/x'])
    """
    path = sys.path if path is None else path
    # the installed package: found on this interpreter's path without the archives
    spec = importlib.machinery.PathFinder.find_spec(
        "pyspark", [p for p in sys.path if not p.endswith(".zip")])
    if spec is None or not spec.submodule_search_locations:
        return []
    installed = os.path.join(os.path.realpath(list(spec.submodule_search_locations)[0]),
                             "python", "lib")
    shipped = [p for p in path if os.path.dirname(os.path.realpath(p)) == installed
               and p.endswith(".zip")]
    for entry in shipped:
        path.remove(entry)
    return shipped


if __name__ == "__main__":
    prefer_installed_pyspark()
    preload()
    from pyspark.daemon import manager

    manager()
