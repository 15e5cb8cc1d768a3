"""Shared fixtures: one SparkSession for the whole run (startup costs seconds), which also
serves Spark Connect clients on a loopback port (``connect_url``)."""

from __future__ import annotations

import socket

import pytest

CONNECT_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
# run by Spark's Python processes as they start, not a module to import (or doctest) here
collect_ignore = ["windowkit/worker_startup"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


_CONNECT_PORT = _free_port()


@pytest.fixture(scope="session")
def spark():
    from windowkit.spark.session import windowkit_session

    # The pyspark wheel's Connect server runs inside this session's JVM: a Connect client
    # (another process) then gets a session of its own on the same Spark.
    session = windowkit_session("local[2]", app_name="windowkit-tests", shuffle_partitions=2,
                                extra_conf={"spark.plugins": CONNECT_PLUGIN,
                                            "spark.connect.grpc.binding.address": "127.0.0.1",
                                            "spark.connect.grpc.binding.port":
                                                str(_CONNECT_PORT)})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_url(spark) -> str:
    """The URL of the Spark Connect server of the ``spark`` session."""
    return f"sc://127.0.0.1:{_CONNECT_PORT}"


@pytest.fixture(autouse=True)
def _spark_for_doctests(request, doctest_namespace):
    # Doctests of the Spark layer get `spark`; nothing else starts a session.
    if request.node.nodeid.startswith(("windowkit/spark/", "windowkit/pipeline/",
                                         "windowkit/report/",
                                         "windowkit/testing/stream_timing.py")):
        doctest_namespace["spark"] = request.getfixturevalue("spark")
