"""Python processes Spark starts without windowkit's daemon (the driver-side process of every
streaming query's ``transformWithStateInPandas``) import PySpark from the installed package, as
the daemon's workers do, and still run the ``sitecustomize`` windowkit's hides
(windowkit.worker_path)."""

from __future__ import annotations

import os
import subprocess
import sys

import pyspark

from windowkit.spark.session import _classic_conf
from windowkit.worker_path import STARTUP_FOLDER

LIB = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib")
SPARK_ZIPS = [os.path.join(LIB, name) for name in sorted(os.listdir(LIB)) if name.endswith(".zip")]
# the module the query-start process imports, and how many of Spark's zips its path holds
WHERE = ("import sys, pyspark.sql.streaming.stateful_processor as m; print(m.__file__); "
         f"print(sum(p.startswith({LIB!r}) for p in sys.path))")


def started_as_spark_starts_it(code: str, executor_pythonpath: str
                               ) -> subprocess.CompletedProcess:
    """Run ``code`` in a Python process whose path Spark would give it: its own zips first,
    then ``spark.executorEnv.PYTHONPATH`` (PythonWorkerFactory's order)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*SPARK_ZIPS, executor_pythonpath])}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True)


def their_sitecustomize(folder) -> str:
    """A ``sitecustomize`` of the user's in ``folder`` (made if missing), which prints a line."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "sitecustomize.py"), "w") as f:
        f.write("print('their-sitecustomize-ran')\n")
    return str(folder)


def test_spark_puts_its_zips_first_and_a_process_then_imports_pyspark_from_them():
    # what happens without windowkit's folder: the premise of the change
    assert SPARK_ZIPS and any(p.endswith("pyspark.zip") for p in SPARK_ZIPS)
    module_file, zips = started_as_spark_starts_it(WHERE, os.devnull).stdout.split()
    assert "pyspark.zip" in module_file
    assert int(zips) == len(SPARK_ZIPS)


def test_a_local_session_starts_spark_python_processes_with_the_installed_pyspark():
    pythonpath = _classic_conf("local[2]", False, None, None, False)[
        "spark.executorEnv.PYTHONPATH"]
    assert pythonpath.split(os.pathsep)[0] == STARTUP_FOLDER
    module_file, zips = started_as_spark_starts_it(WHERE, pythonpath).stdout.split()
    installed = os.path.dirname(pyspark.__file__)
    assert os.path.realpath(module_file).startswith(os.path.realpath(installed) + os.sep)
    assert module_file.endswith(".py")
    assert int(zips) == 0


def test_the_sitecustomize_windowkit_hides_still_runs(tmp_path):
    out = started_as_spark_starts_it(
        WHERE, os.pathsep.join([STARTUP_FOLDER, their_sitecustomize(tmp_path)])).stdout.split()
    assert out[0] == "their-sitecustomize-ran"
    assert "pyspark.zip" not in out[1]


def test_a_second_copy_of_windowkits_folder_on_the_path_runs_the_hidden_one_once(tmp_path):
    # another windowkit (a worktree, a shipped archive) further on the path: each copy goes
    # on after itself, so the user's sitecustomize runs once and nothing recurses
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(STARTUP_FOLDER, copy)
    done = started_as_spark_starts_it(WHERE, os.pathsep.join(
        [STARTUP_FOLDER, str(copy), their_sitecustomize(tmp_path / "theirs")]))
    assert done.stdout.split()[0] == "their-sitecustomize-ran"
    assert done.stdout.count("their-sitecustomize-ran") == 1
    assert "Error" not in done.stderr
