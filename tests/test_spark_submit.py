"""Under spark-submit, windowkit's session keeps spark-submit's master, memory and Python."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark

SCRIPT = """\
from windowkit.spark.session import windowkit_session
s = windowkit_session(None, app_name="x", quiet=True)
conf = s.sparkContext.getConf()
print("RESULT", s.sparkContext.master, conf.get("spark.driver.memory"),
      conf.get("spark.pyspark.python", "unset"), s.conf.get("spark.sql.session.timeZone"))
"""


def test_a_session_under_spark_submit_keeps_its_master_and_driver_settings(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    bin_dir = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    done = subprocess.run([os.path.join(bin_dir, "spark-submit"), "--master", "local[1]",
                           "--driver-memory", "1g", str(script)],
                          env=env, capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    assert lines, done.stderr[-2000:]
    # windowkit's own settings still apply (UTC), spark-submit's are not overridden
    assert lines[0].split()[1:] == ["local[1]", "1g", "unset", "UTC"]
