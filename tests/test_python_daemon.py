"""windowkit's Python daemon: workers start with PySpark from the installed package (not
recompiled from pyspark.zip) and windowkit already imported (windowkit.spark.python_daemon)."""

from __future__ import annotations

import io
import os
import socket
import sys
import types

import pyspark

from windowkit.spark.python_daemon import (
    PRELOADED,
    AcknowledgedReads,
    acknowledge_reads_at_once,
    acknowledging_reader,
    prefer_installed_pyspark,
    preload,
    warm_numba,
)
from windowkit.testing.stream_timing import time_stream


def test_only_the_installed_packages_own_archives_leave_the_path():
    home = os.path.dirname(pyspark.__file__)
    lib, jars = os.path.join(home, "python", "lib"), os.path.join(home, "jars")
    path = ["/opt/spark/python/lib/pyspark.zip", os.path.join(lib, "pyspark.zip"), "/x",
            os.path.join(lib, "py4j-0.10.9.9-src.zip"), os.path.join(jars, "spark-core.jar"),
            "/opt/spark/jars/spark-core.jar", os.path.join(jars, "notes.zip"), sys.path[-1]]
    kept = [path[0], "/x", path[5], path[6], sys.path[-1]]
    removed = prefer_installed_pyspark(path)
    assert path == kept
    assert [os.path.basename(p) for p in removed] == [
        "pyspark.zip", "py4j-0.10.9.9-src.zip", "spark-core.jar"]
    assert prefer_installed_pyspark(path) == []  # nothing of the installed package left


def test_the_installed_jars_hold_no_python():
    # the jars leave the workers' path on that ground: check it for the installed pyspark
    import zipfile

    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    core = [j for j in os.listdir(jars) if j.startswith("spark-core_")]
    assert core
    for name in core:
        with zipfile.ZipFile(os.path.join(jars, name)) as jar:
            assert not [n for n in jar.namelist() if n.endswith((".py", ".pyc"))]


def test_warm_numba_sets_numba_up():
    from numba.core.registry import cpu_target

    assert warm_numba()
    assert cpu_target.typing_context._registries  # numba's implementations are registered


def test_preload_reports_what_it_could_not_import():
    assert preload(("json", "windowkit_no_such_module", "os.path")) == [
        "windowkit_no_such_module"]
    assert preload(PRELOADED) == []  # every module it names exists in this environment


def test_local_workers_fork_from_the_daemon_with_windowkit_imported(spark):
    def worker_facts(batches):  # defined here: pickled by value
        import gc

        import pyarrow as pa
        from numba.core.registry import cpu_target

        for _ in batches:
            pass
        readers = [o for o in gc.get_objects()
                   if type(o).__name__ == "AcknowledgedReads" and not o.closed]
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            parent = f.read().replace(b"\0", b" ").decode()
        yield pa.RecordBatch.from_pydict({
            "parent": [parent], "pyspark_file": [sys.modules["pyspark"].__file__],
            "preloaded": [sorted(m for m in PRELOADED if m in sys.modules)],
            "archives": [[p for p in sys.path if p.endswith((".zip", ".jar"))
                          and os.path.realpath(p).startswith(home)]],
            "numba_ready": [bool(cpu_target.typing_context._registries)],
            "acknowledged_reads": [len(readers)]})

    home = os.path.realpath(os.path.dirname(pyspark.__file__))
    assert spark.conf.get("spark.python.daemon.module") == "windowkit.spark.python_daemon"
    rows = spark.range(4, numPartitions=2).mapInArrow(
        worker_facts, "parent string, pyspark_file string, preloaded array<string>, "
        "archives array<string>, numba_ready boolean, acknowledged_reads long").collect()
    assert len(rows) == 2
    for row in rows:
        assert "windowkit.spark.python_daemon" in row["parent"]
        assert ".zip" not in row["pyspark_file"]
        assert row["pyspark_file"].startswith(os.path.dirname(pyspark.__file__))
        assert row["preloaded"] == sorted(PRELOADED)
        assert row["archives"] == []
        assert row["numba_ready"]  # set up in the daemon, before the worker's first kernel
        assert row["acknowledged_reads"] == 1  # its task, from the JVM


def test_stateful_streaming_workers_share_the_daemon_of_the_other_workers(spark, tmp_path):
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Facts(StatefulProcessor):  # defined here: pickled by value
        def init(self, handle):
            pass

        def handleInputRows(self, key, rows, timerValues):
            for _ in rows:
                pass
            yield pd.DataFrame({"daemon": [os.getppid()],
                                "simplified": [os.environ.get("SPARK_SIMPLIFIED_TRACEBACK")]})

        def close(self):
            pass

    def map_facts(batches):
        import pyarrow as pa

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"daemon": [os.getppid()]})

    spark.range(2, numPartitions=2).selectExpr("id AS k").write.parquet(str(tmp_path / "in"))
    stream = spark.readStream.schema("k long").parquet(str(tmp_path / "in"))
    out = stream.groupBy("k").transformWithStateInPandas(
        statefulProcessor=Facts(), outputStructType="daemon long, simplified string",
        outputMode="Append", timeMode="None")
    time_stream(out.writeStream.format("parquet").option("path", str(tmp_path / "out"))
                .option("checkpointLocation", str(tmp_path / "ck")))
    stateful = spark.read.parquet(str(tmp_path / "out")).collect()
    mapped = spark.range(4, numPartitions=2).mapInArrow(map_facts, "daemon long").collect()
    assert stateful and {r["simplified"] for r in stateful} == {"1"}
    assert {r["daemon"] for r in stateful} == {r["daemon"] for r in mapped}


def _tcp_pair():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        sender = socket.create_connection(listener.getsockname())
        return sender, listener.accept()[0]


def test_an_acknowledging_reader_reads_what_was_sent_however_it_is_cut():
    sender, receiver = _tcp_pair()
    payload = os.urandom(3 * 65536 + 17)
    reader = acknowledging_reader(os.dup(receiver.fileno()), 65536)
    receiver.close()
    assert isinstance(reader.raw, AcknowledgedReads)
    for start in range(0, len(payload), 1000):  # many small writes, as the JVM's
        sender.sendall(payload[start:start + 1000])
    sender.close()
    got = [reader.read(4), reader.read(70000), reader.read(1), reader.read()]
    assert b"".join(got) == payload
    assert reader.read() == b""
    reader.close()
    assert reader.raw.closed


def test_only_a_tcp_socket_gets_an_acknowledging_reader_and_other_ends_stay_open():
    read_end, write_end = os.pipe()
    unix_a, unix_b = socket.socketpair(socket.AF_UNIX)
    try:
        assert acknowledging_reader(read_end) is None
        assert acknowledging_reader(unix_a.fileno()) is None
        os.write(write_end, b"p")
        unix_b.sendall(b"u")
        assert os.read(read_end, 1) == b"p"  # still open, still ours
        assert unix_a.recv(1) == b"u"
    finally:
        os.close(read_end)
        os.close(write_end)
        unix_a.close()
        unix_b.close()


def test_the_daemons_view_of_os_changes_only_how_a_tcp_socket_is_read():
    daemon = types.ModuleType("daemon")
    daemon.os = os
    acknowledge_reads_at_once(daemon)
    assert daemon.os.dup is os.dup and daemon.os.environ is os.environ
    sender, receiver = _tcp_pair()
    read_end, write_end = os.pipe()
    files = [daemon.os.fdopen(os.dup(receiver.fileno()), "rb", 4096),
             daemon.os.fdopen(os.dup(receiver.fileno()), "wb", 4096),
             daemon.os.fdopen(read_end, "rb", 4)]
    try:
        assert isinstance(files[0].raw, AcknowledgedReads)
        assert not isinstance(files[1], io.BufferedReader)
        assert not isinstance(files[2].raw, AcknowledgedReads)
        files[1].write(b"back")
        files[1].flush()
        assert sender.recv(4) == b"back"
        sender.sendall(b"there")
        os.write(write_end, b"in")
        assert files[0].read(5) == b"there" and files[2].read(2) == b"in"
    finally:
        for f in files:
            f.close()
        for end in (sender, receiver):
            end.close()
        os.close(write_end)
