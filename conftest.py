"""Shared fixtures: one SparkSession for the whole run (startup costs seconds)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from windowkit.spark.session import windowkit_session

    session = windowkit_session("local[2]", app_name="windowkit-tests", shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _spark_for_doctests(request, doctest_namespace):
    # Doctests of the Spark layer get `spark`; nothing else starts a session.
    if request.node.nodeid.startswith(("windowkit/spark/", "windowkit/pipeline/",
                                         "windowkit/report/",
                                         "windowkit/testing/stream_timing.py")):
        doctest_namespace["spark"] = request.getfixturevalue("spark")
