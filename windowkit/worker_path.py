"""Where the Python processes Spark starts import PySpark from.

Spark puts the archives its distribution ships (``pyspark.zip``, py4j's zip, and its core jar)
first on the path of every Python process it starts. For a pip-installed pyspark those are
files inside the installed package, which holds the same code with its bytecode cached; from
the zip, which holds no bytecode, every new process compiles PySpark's modules again.

Two kinds of process get PySpark from the installed package instead:

* the workers, forked by windowkit's daemon (:mod:`windowkit.spark.python_daemon`), which
  calls :func:`prefer_installed_pyspark` before it imports anything;
* the processes Spark starts without the daemon: ``transformWithStateInPandas`` starts one on
  the driver as every streaming query begins (``python -m
  pyspark.sql.streaming.transform_with_state_driver_worker``). The session puts
  :data:`STARTUP_FOLDER` on every Python process's path (``spark.executorEnv.PYTHONPATH``);
  its ``sitecustomize`` calls :func:`prefer_installed_pyspark` as the interpreter starts, then
  runs the ``sitecustomize`` it hides, if any (:func:`run_next_sitecustomize`). A query's
  first micro-batch was planned in 0.57 s, 0.25 s with this (the multi-granular streaming
  benchmark's query, ``local[2]``; most of the difference was that process compiling PySpark).

Nothing here imports pyspark: it runs before the path is set.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

#: The folder whose ``sitecustomize`` module every Python process of a local session runs.
STARTUP_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker_startup")


def prefer_installed_pyspark(path: list[str] | None = None) -> list[str]:
    """Drop from ``path`` (default: ``sys.path``) the archives of the installed pyspark:
    its ``pyspark.zip`` and py4j zips, and its jars.

    Spark puts the archives its own distribution ships first on a worker's path. For a
    pip-installed pyspark those are files inside the installed package, so the package itself
    holds the same code, with bytecode cached: imported from it, PySpark's modules are not
    compiled again by every new Python process. Spark also puts its core jar on the path (for
    distributions that once shipped PySpark inside it); it holds no Python, but every search
    of the path for package metadata lists its 5,000 entries, and numba's first compilation
    in each worker searches it for entry points (0.17 s). Returns the entries removed.

    Examples
    --------
    >>> import pyspark, os
    >>> home = os.path.dirname(pyspark.__file__)
    >>> path = [os.path.join(home, "python", "lib", "pyspark.zip"), "/elsewhere/pyspark.zip",
    ...         os.path.join(home, "jars", "spark-core_2.13-4.1.1.jar"), "/x"]
    >>> [os.path.basename(p) for p in prefer_installed_pyspark(path)], path
    (['pyspark.zip', 'spark-core_2.13-4.1.1.jar'], ['/elsewhere/pyspark.zip', '/x'])
    """
    path = sys.path if path is None else path
    # the installed package: found on this interpreter's path without the archives
    spec = importlib.machinery.PathFinder.find_spec(
        "pyspark", [p for p in sys.path if not p.endswith((".zip", ".jar"))])
    if spec is None or not spec.submodule_search_locations:
        return []
    home = os.path.realpath(list(spec.submodule_search_locations)[0])
    own = {(os.path.join(home, "python", "lib"), ".zip"), (os.path.join(home, "jars"), ".jar")}
    shipped = [p for p in path
               if (os.path.dirname(os.path.realpath(p)), os.path.splitext(p)[1]) in own]
    for entry in shipped:
        path.remove(entry)
    return shipped


def run_next_sitecustomize(own_folder: str, path: list[str] | None = None) -> bool:
    """Run the ``sitecustomize`` module that the one in ``own_folder`` hides on ``path``
    (default: ``sys.path``): Python runs only the first it finds, and a distribution or a user
    may have one of their own. The search goes on where Python's stopped, after
    ``own_folder`` (the running ``sitecustomize``'s own folder, which need not be
    :data:`STARTUP_FOLDER`: the windowkit imported may be another copy), so a second copy of
    this folder further on is run once, not in turn. Returns whether there was one.

    Examples
    --------
    >>> import tempfile
    >>> other = tempfile.mkdtemp()
    >>> with open(os.path.join(other, "sitecustomize.py"), "w") as f:
    ...     _ = f.write("RAN = True")
    >>> before = sys.modules.get("sitecustomize")
    >>> run_next_sitecustomize(STARTUP_FOLDER, [other, STARTUP_FOLDER])
    False
    >>> run_next_sitecustomize(STARTUP_FOLDER, [STARTUP_FOLDER, other])
    True
    >>> sys.modules["sitecustomize"].RAN
    True
    >>> sys.modules["sitecustomize"] = before
    """
    path = sys.path if path is None else path
    own = os.path.realpath(own_folder)
    found = [os.path.realpath(p or os.curdir) for p in path]
    rest = path[found.index(own) + 1:] if own in found else path
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return False
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)
    return True
