"""A SparkSession configured the way windowkit's operators need it."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys

from pyspark.sql import SparkSession

from windowkit.cli.spark_urls import DEFAULT_MASTER
from windowkit.worker_path import STARTUP_FOLDER

PYTHON_DAEMON = "windowkit.spark.python_daemon"
SIMPLIFIED_TRACEBACK_CONF = "spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# The one byte limit at which Spark does not measure an Arrow batch after every row.
ARROW_NO_BYTE_LIMIT = 2**31 - 1
LOCAL_CHECKPOINT_MANAGER = ("org.apache.spark.sql.execution.streaming.checkpointing."
                            "FileSystemBasedCheckpointFileManager")


def check_java() -> None:
    """Raise ``RuntimeError`` with one clear line if Java 17+ is not available.

    Examples
    --------
    >>> check_java()  # Java 17 is on this machine
    """
    java = shutil.which("java")
    if java is None and os.environ.get("JAVA_HOME"):
        candidate = os.path.join(os.environ["JAVA_HOME"], "bin", "java")
        java = candidate if os.path.exists(candidate) else None
    if java is None:
        msg = "windowkit needs Java 17 or newer for Spark 4: install a JDK 17 and put java on PATH"
        raise RuntimeError(msg)
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    try:
        major = int(out.split('"')[1].split(".")[0])
    except (IndexError, ValueError):
        major = 0
    if major < 17:
        msg = f"windowkit needs Java 17 or newer for Spark 4; found: {out.splitlines()[:1]}"
        raise RuntimeError(msg)


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (a thin client with no JVM of its own).

    Classic-only handles (``sparkContext``, ``_jvm``, ``_jdf``) raise on such a session, so the
    few places that use them check this first.

    Examples
    --------
    >>> is_connect(spark)
    False
    """
    return type(spark).__module__.startswith("pyspark.sql.connect")


def windowkit_session(
    master: str | None = None,
    app_name: str = "windowkit",
    shuffle_partitions: int | None = None,
    extra_conf: dict[str, str] | None = None,
    quiet: bool = False,
    remote: str | None = None,
) -> SparkSession:
    """Get or create a SparkSession with windowkit's configuration.

    Local mode unless ``master`` names a cluster, or a Spark Connect session with ``remote``;
    with neither and no ``extra_conf``, an active session is returned unchanged. Local mode
    without a master is ``WINDOWKIT_MASTER`` if set, else ``local[*,4]``: every core, and a
    failed task (a Python worker killed, a lost executor) tried up to 4 times, as on a cluster;
    Spark's local mode retries only when its master says so. A master given (``local[2]``)
    stays as given.
    Sets the Python workers to this
    interpreter, the RocksDB state store (needed by ``transformWithStateInPandas``), Arrow with
    large batches bounded by rows only (no per-row byte count), shuffle partitions sized for the
    machine (one per core in local mode), RocksDB changelog checkpointing, UTC session time and,
    in local mode, a checkpoint file manager that does not spawn a process per file, a
    Python daemon whose workers start with windowkit imported
    (:mod:`windowkit.spark.python_daemon`), shared by streaming queries' stateful stages, and
    PySpark imported from the installed package (not recompiled from ``pyspark.zip``) by every
    Python process Spark starts (:mod:`windowkit.worker_path`).

    Parameters
    ----------
    master : str, optional
        A master URL such as ``"local[2]"``, ``"local[2,4]"`` (4 attempts per task),
        ``"spark://host:7077"`` or ``"yarn"``.
    app_name : str
        The application name.
    shuffle_partitions : int, optional
        Defaults to one per local core in local mode, else Spark's default.
    extra_conf : dict, optional
        More Spark configuration.
    quiet : bool
        Start the JVM with a log configuration that prints nothing (the command line's
        default: its own one-line errors report failures).
    remote : str, optional
        A Spark Connect server, ``"sc://HOST:PORT"`` (the session then sets only what a
        Connect session may: the SQL settings above), or ``"local"``/``"local[N]"`` to start
        one in this process with every setting above (needs ``windowkit[connect]``).

    Returns
    -------
    pyspark.sql.SparkSession

    Examples
    --------
    >>> session = windowkit_session("local[2]")
    >>> session.conf.get("spark.sql.session.timeZone"), session.conf.get(
    ...     "spark.sql.streaming.stateStore.providerClass").endswith("RocksDBStateStoreProvider")
    ('UTC', True)
    >>> session.conf.get("spark.sql.execution.arrow.maxBytesPerBatch") == str(ARROW_NO_BYTE_LIMIT)
    True
    >>> session.conf.get("spark.sql.streaming.checkpointFileManagerClass").split(".")[-1]
    'FileSystemBasedCheckpointFileManager'
    """
    if master is not None and remote is not None:
        msg = f"give `master` or `remote`, not both; got master={master!r}, remote={remote!r}"
        raise ValueError(msg)
    if remote is not None and not remote.startswith("local"):
        return _connect_session(remote, app_name, shuffle_partitions, extra_conf)
    active = SparkSession.getActiveSession()
    if active is not None and master is None and remote is None and not extra_conf:
        return active  # keep the caller's session and its configuration as they are
    check_java()
    submitted = _submitted_master() if master is None and remote is None else None
    if submitted is None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    master = remote or master or submitted or os.environ.get("WINDOWKIT_MASTER", DEFAULT_MASTER)
    conf = _classic_conf(master, submitted is not None, shuffle_partitions, extra_conf, quiet)
    builder = SparkSession.builder.appName(app_name)
    if remote is not None:
        builder = builder.remote(remote)
    elif submitted is None:
        builder = builder.master(master)
    for k, v in conf.items():
        builder = builder.config(k, v)
    if quiet:
        with _jvm_stderr_to_devnull():
            spark = builder.getOrCreate()
    else:
        spark = builder.getOrCreate()
    if not is_connect(spark):
        spark.sparkContext.setLogLevel("OFF" if quiet else "ERROR")
    return spark


def _sql_conf(shuffle_partitions: int | None) -> dict[str, str]:
    """The settings of a session that any session, a Connect one included, may change."""
    conf = {
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "200000",
        # Under a byte limit (Spark 4's default: 64 MB) the JVM sums the Arrow batch's buffer
        # sizes after every row it writes for Python: a third of its CPU time in a
        # threshold_frames job. Spark skips the check only at exactly Int.MaxValue.
        "spark.sql.execution.arrow.maxBytesPerBatch": str(ARROW_NO_BYTE_LIMIT),
        "spark.sql.session.timeZone": "UTC",
    }
    if shuffle_partitions:
        conf["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    return conf


def _classic_conf(master: str, submitted: bool, shuffle_partitions: int | None,
                  extra_conf: dict[str, str] | None, quiet: bool) -> dict[str, str]:
    """Every setting of a session whose JVM this process starts (classic, or a local Connect
    server)."""
    local = master.startswith("local")
    if shuffle_partitions is None and local:
        # every streaming micro-batch pays a fixed cost per state-store partition: one per core
        shuffle_partitions = local_cores(master)
    conf = {}
    if not submitted:
        # under spark-submit, its --master, driver memory and Python (PYSPARK_PYTHON, e.g. a
        # shipped environment's) stand: options set here would override them
        conf["spark.pyspark.python"] = sys.executable
        conf["spark.driver.memory"] = os.environ.get("WINDOWKIT_DRIVER_MEMORY", "4g")
    conf.update(_sql_conf(shuffle_partitions))
    # With it on, every pyspark.sql.functions call and Column operation also records its
    # Python call site in the JVM (about four py4j round trips each): half the driver's
    # 1,000 round trips building a multi_granular job. Errors keep Spark's own context.
    conf["spark.python.sql.dataFrameDebugging.enabled"] = "false"
    conf["spark.ui.enabled"] = "false"
    conf["spark.ui.showConsoleProgress"] = "false"
    if local:
        # Spark's default manager reaches a local disk through Hadoop's FileContext, which
        # (Hadoop's native library is not shipped with pyspark) spawns `chmod` and `readlink`
        # processes for every checkpoint file it writes: 0.1-0.3 s of each micro-batch's state
        # commit here. This one writes the same files and renames them with the FileSystem API
        # (atomic on a local disk); on a cluster Spark's default stays.
        conf["spark.sql.streaming.checkpointFileManagerClass"] = LOCAL_CHECKPOINT_MANAGER
        # workers forked with pandas, pyarrow, PySpark's serializers and windowkit imported
        conf["spark.python.daemon.module"] = PYTHON_DAEMON
        # Every Python process Spark starts runs windowkit's sitecustomize first, so that it
        # imports PySpark from the installed package, not the zip (windowkit.worker_path).
        # If windowkit came with --py-files, it goes on the path too: Spark adds those to a
        # worker's path only once the worker runs a task, after the daemon (a windowkit
        # module) has started.
        shipped = shipped_archive()
        conf["spark.executorEnv.PYTHONPATH"] = os.pathsep.join(
            [STARTUP_FOLDER, *([shipped] if shipped is not None else [])])
        # PySpark keeps a daemon per set of worker environment variables, and its SQL runners
        # add this one (simplified tracebacks, on by default) where the stateful streaming
        # runner does not: a streaming query's stateful stage then started a daemon and
        # workers of its own (1.0-1.3 s of a first micro-batch). Set for every worker, both
        # kinds share one daemon and its idle workers, with simplified tracebacks throughout.
        simplified = (extra_conf or {}).get(SIMPLIFIED_TRACEBACK_CONF, "true")
        if simplified.lower() == "true":
            conf["spark.executorEnv.SPARK_SIMPLIFIED_TRACEBACK"] = "1"
    if quiet:
        # Spark sets this level as the context starts: under spark-submit, whose JVM (and log
        # configuration) predates this process, it is what keeps Spark's INFO lines out
        conf["spark.log.level"] = "OFF"
    if quiet and not submitted:
        config = os.path.join(os.path.dirname(__file__), "log4j2-quiet.properties")
        conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{config}"
    conf.update(extra_conf or {})
    return conf


def shipped_archive(module_file: str | None = None) -> str | None:
    """The zip or wheel windowkit is imported from (``spark-submit --py-files``), or None
    when it is installed as files.

    Examples
    --------
    >>> shipped_archive("/jobs/windowkit.zip/windowkit/spark/session.py")
    '/jobs/windowkit.zip'
    >>> shipped_archive() is None   # these tests import windowkit from its folder
    True
    """
    path = module_file or __file__
    package = os.path.dirname(os.path.dirname(os.path.dirname(path)))  # above windowkit/
    return None if os.path.isdir(package) else package


def local_cores(master: str) -> int:
    """The cores of a ``local``, ``local[N]`` or ``local[*]`` master (``local[N, F]`` too).

    Examples
    --------
    >>> local_cores("local"), local_cores("local[3]"), local_cores("local[2, 4]")
    (1, 3, 2)
    >>> local_cores(DEFAULT_MASTER) == (os.cpu_count() or 2)
    True
    """
    inside = master[master.find("[") + 1:master.find("]")] if "[" in master else "1"
    first = inside.split(",")[0].strip()
    return int(first) if first.isdigit() else os.cpu_count() or 2


def _connect_session(remote: str, app_name: str, shuffle_partitions: int | None,
                     extra_conf: dict[str, str] | None) -> SparkSession:
    """A session on a running Spark Connect server: only SQL settings can be given to it."""
    try:
        import pyspark.sql.connect.session  # noqa: F401  (the client's packages)
    except ImportError as error:
        msg = (f"`remote` needs the Spark Connect client packages: pip install "
               f"'windowkit[connect]' ({error})")
        raise RuntimeError(msg) from error
    builder = SparkSession.builder.remote(remote).appName(app_name)
    for k, v in {**_sql_conf(shuffle_partitions), **(extra_conf or {})}.items():
        builder = builder.config(k, v)
    return builder.getOrCreate()


def ensure_stateful_conf(spark: SparkSession) -> None:
    """Give ``spark`` the state store a stateful streaming query of windowkit needs.

    ``transformWithStateInPandas`` runs only on RocksDB state stores; a session windowkit did
    not build (a notebook's, a Connect server's) has Spark's default HDFS-backed store, which
    Spark refuses only when the query starts. The setting applies to queries started from now
    on; a query restarted on a checkpoint keeps the store it was written with.

    Examples
    --------
    >>> ensure_stateful_conf(spark)
    >>> spark.conf.get("spark.sql.streaming.stateStore.providerClass") == ROCKSDB_PROVIDER
    True
    """
    key = "spark.sql.streaming.stateStore.providerClass"
    if spark.conf.get(key, None) == ROCKSDB_PROVIDER:
        return
    try:
        spark.conf.set(key, ROCKSDB_PROVIDER)
    except Exception as error:  # a server that forbids it: say which setting, in one line
        msg = (f"windowkit's streaming functions need the RocksDB state store: set {key}="
               f"{ROCKSDB_PROVIDER} on the session ({type(error).__name__})")
        raise RuntimeError(msg) from error


def _submitted_master() -> str | None:
    """The ``--master`` of ``spark-submit`` when this driver was started by it, else None.

    spark-submit starts the JVM first and hands this process its gateway (the
    ``PYSPARK_GATEWAY_PORT`` variable); the JVM's configuration then holds ``spark.master``.
    """
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return SparkConf().get("spark.master", None)


@contextlib.contextmanager
def _jvm_stderr_to_devnull():
    """Start the JVM (a child of this process) with its standard error on /dev/null.

    The JVM itself prints to it before any log configuration applies (e.g. "Using incubator
    modules"), and keeps the descriptor it was started with; this process gets its own back.
    """
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
