"""Whether the Spark this process would start can read Kafka, found before Spark starts.

Spark's own file formats (csv, json, parquet) are always there; ``kafka`` is a connector Spark
loads only when its package is on the classpath. Without a JVM the classpath cannot be asked,
so the places that put it there are read instead: ``PYSPARK_SUBMIT_ARGS`` (``--packages`` or
``--jars``), ``spark.jars.packages`` / ``spark.jars`` in ``spark-defaults.conf`` (in
``SPARK_CONF_DIR``, else ``SPARK_HOME/conf``), and the jars of ``SPARK_HOME``. Under
``spark-submit`` (its JVM is already running, with its own ``--packages``) and on a Spark
Connect server (its classpath is the server's) nothing is refused here: Spark says.
"""

from __future__ import annotations

import glob
import importlib.metadata
import os
import re
from collections.abc import Mapping

#: The artifact of Spark's Kafka connector (without its Scala version).
KAFKA_ARTIFACT = "spark-sql-kafka-0-10"
#: The Scala version of the pyspark wheel's Spark 4 build.
SCALA_VERSION = "2.13"


def kafka_package() -> str:
    """The Maven coordinates of the Kafka connector matching the installed pyspark.

    Examples
    --------
    >>> kafka_package()
    'org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1'
    """
    return f"org.apache.spark:{KAFKA_ARTIFACT}_{SCALA_VERSION}:{_spark_version()}"


def _spark_version() -> str:
    return importlib.metadata.version("pyspark")


def spark_home(env: Mapping[str, str]) -> str:
    """``SPARK_HOME``, else the installed pyspark's folder (what pyspark starts Spark from).

    Examples
    --------
    >>> spark_home({"SPARK_HOME": "/opt/spark"}), os.path.basename(spark_home({}))
    ('/opt/spark', 'pyspark')
    """
    if env.get("SPARK_HOME"):
        return env["SPARK_HOME"]
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    return os.path.dirname(spec.origin) if spec and spec.origin else ""


def kafka_missing(remote: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """Why Spark started from here cannot read Kafka (one line naming the package), or None when
    it can, or when only Spark can tell (under spark-submit, or on a Spark Connect ``remote``).

    Examples
    --------
    >>> kafka_missing(env={"SPARK_HOME": "/nowhere"})  # doctest: +ELLIPSIS
    "format 'kafka' needs Spark's Kafka connector, which this Spark does not load: ...
    >>> kafka_missing(env={"SPARK_HOME": "/nowhere",
    ...                    "PYSPARK_SUBMIT_ARGS": "--packages " + kafka_package()}) is None
    True
    >>> kafka_missing(remote="sc://host:15002", env={}) is None
    True
    """
    env = os.environ if env is None else env
    if "PYSPARK_GATEWAY_PORT" in env or (remote and not remote.startswith("local")):
        return None
    if KAFKA_ARTIFACT in env.get("PYSPARK_SUBMIT_ARGS", ""):
        return None
    home = spark_home(env)
    conf_dir = env.get("SPARK_CONF_DIR") or os.path.join(home, "conf")
    if KAFKA_ARTIFACT in _jar_settings(os.path.join(conf_dir, "spark-defaults.conf")):
        return None
    if glob.glob(os.path.join(home, "jars", f"{KAFKA_ARTIFACT}*.jar")):
        return None
    package = kafka_package()
    return (f"format 'kafka' needs Spark's Kafka connector, which this Spark does not load: run "
            f"with spark-submit --packages {package}, or add spark.jars.packages {package} to "
            f"{os.path.join(conf_dir, 'spark-defaults.conf')}")


def _jar_settings(path: str) -> str:
    """The values of ``spark.jars.packages`` and ``spark.jars`` in a ``spark-defaults.conf``."""
    if not os.path.isfile(path):
        return ""
    values = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            # Spark reads "key value", "key=value" and "key = value" alike
            parts = re.split(r"\s*=\s*|\s+", line.strip(), maxsplit=1)
            if parts[0] in ("spark.jars.packages", "spark.jars") and len(parts) == 2:
                values.append(parts[1])
    return " ".join(values)
