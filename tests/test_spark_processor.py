"""The stateful processor as Spark's per-query driver worker sees it: a fresh interpreter that
unpickles it and calls ``init`` to learn its state variables, before any micro-batch runs."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import windowkit
from windowkit.core.frames import ThresholdFramer
from windowkit.core.widening import EpisodeDetector, WideningConfig, WindowWidening
from windowkit.spark.processor import RunnerProcessor

pytestmark = pytest.mark.spark

_DRIVER_WORKER = """
import json, pickle, sys
import pyspark.sql.streaming.transform_with_state_driver_worker  # what Spark runs
processor = pickle.loads(open(sys.argv[1], "rb").read())
declared = []
class Handle:
    def getValueState(self, name, schema):
        declared.append(name)
    def getMapState(self, name, key, value):
        declared.append(name)
processor.init(Handle())
heavy = [m for m in ("pandas", "pyarrow", "numba", "windowkit.spark.adapter") if m in sys.modules]
operator = type(processor.factory()).__name__
print(json.dumps({"declared": declared, "heavy_before_factory": heavy, "operator": operator}))
"""


@pytest.mark.parametrize(("factory", "declared", "operator"), [
    (functools.partial(ThresholdFramer, "2 rows"), ["runner", "wk_index", "wk_chunks"],
     "ThresholdFramer"),
    (functools.partial(WindowWidening, EpisodeDetector("remote-shell"),
                       config=WideningConfig.create(base="1 second", max_duration="1 hour")),
     ["runner"], "WindowWidening"),
])
def test_the_driver_worker_learns_the_state_variables_without_pandas_pyarrow_or_numba(
        tmp_path, factory, declared, operator):
    # Spark starts this interpreter for every streaming query (its first micro-batch waits
    # for it): unpickling the processor imported pandas, pyarrow and numba, 0.44 s of it
    from pyspark import cloudpickle

    path = tmp_path / "processor.pkl"
    path.write_bytes(cloudpickle.dumps(RunnerProcessor(factory, ["value"], None, 0, [0])))
    env = {**os.environ, "PYTHONPATH": str(Path(windowkit.__file__).parents[1])}
    out = subprocess.run([sys.executable, "-c", _DRIVER_WORKER, str(path)], env=env,
                         capture_output=True, text=True, check=True, timeout=120)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"declared": declared, "heavy_before_factory": [], "operator": operator}
