"""Exactly-once output (Parquet or CSV) of streaming queries, read by Spark, pandas, pyarrow.

``foreachBatch`` gives at-least-once delivery: a micro-batch whose output was written but whose
commit Spark had not yet recorded when the driver died is run again after the restart (with the
same rows: same offsets, same state version). Appending would write it twice. Here each
micro-batch's output goes to its own folder ``NAME/batch=N``: written first under
``NAME/_staging/batch=N`` and then renamed into place, which is atomic on a local disk and on
HDFS. A replayed batch finds its folder and writes nothing; a batch killed mid-write left only a
staging folder, which the replay overwrites. Readers never see half a batch: pyarrow and pandas
skip names starting with ``_`` or ``.`` (Spark's too), and read ``batch`` as a partition column.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line reads OUTPUT_FORMATS before Spark is imported
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import StreamingQuery

STAGING = "_staging"
#: Test hook: kill the driver (SIGKILL) right after writing this micro-batch (a batch id, or
#: "first": the first one this process writes), before Spark records its commit, to prove that
#: the replay after a restart writes nothing twice.
KILL_AFTER_WRITE_ENV = "WINDOWKIT_TEST_KILL_AFTER_BATCH"

Splitter = Callable[["DataFrame"], dict[str, "DataFrame"]]


#: The formats a result is written in: Parquet (the default), or CSV with a header line.
OUTPUT_FORMATS = ("parquet", "csv")


def csv_columns(df: DataFrame) -> DataFrame:
    """``df`` with the columns CSV cannot hold made text: arrays, maps and structs as JSON,
    bytes as base64 (timestamps stay timestamps: :func:`write_frame` writes them in ISO 8601,
    to the microsecond).

    Examples
    --------
    >>> df = spark.createDataFrame([([1, 2], b"ab", 3)], "a array<long>, b binary, c long")
    >>> csv_columns(df).first()
    Row(a='[1,2]', b='YWI=', c=3)
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    def text(field: T.StructField):
        column = F.col(f"`{field.name}`")
        if isinstance(field.dataType, (T.ArrayType, T.MapType, T.StructType)):
            return F.to_json(column).alias(field.name)
        if isinstance(field.dataType, T.BinaryType):
            return F.base64(column).alias(field.name)
        return column

    return df.select(*[text(f) for f in df.schema.fields])


def write_frame(df: DataFrame, path: str, fmt: str = "parquet") -> None:
    """Write ``df`` to the folder ``path`` (replacing it) in ``fmt``, one of
    :data:`OUTPUT_FORMATS`.

    Examples
    --------
    >>> import tempfile
    >>> out = tempfile.mkdtemp() + "/t"
    >>> write_frame(spark.createDataFrame([(1,)], "x long"), out, "csv")
    >>> spark.read.csv(out, header=True).first()
    Row(x='1')
    """
    if fmt not in OUTPUT_FORMATS:
        msg = f"`output_format` must be one of {', '.join(OUTPUT_FORMATS)}; got {fmt!r}"
        raise ValueError(msg)
    if fmt == "csv":
        # Spark's default text of a timestamp stops at milliseconds
        (csv_columns(df).write.mode("overwrite").option("header", True)
         .option("timestampFormat", "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX")
         .option("timestampNTZFormat", "yyyy-MM-dd'T'HH:mm:ss.SSSSSS").csv(path))
    else:
        df.write.mode("overwrite").parquet(path)


def commit_batch(part: DataFrame, base: str, batch_id: int, fmt: str = "parquet") -> bool:
    """Write ``part`` as ``base/batch=<batch_id>`` (in ``fmt``, as :func:`write_frame`) exactly
    once; False if it was already there.

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> out = tempfile.mkdtemp()
    >>> df = spark.createDataFrame([(1,)], "x long")
    >>> commit_batch(df, out, 0), commit_batch(df, out, 0)
    (True, False)
    >>> pd.read_parquet(out)["x"].tolist()
    [1]
    """
    fs = _filesystem(part)
    final = f"{base}/batch={batch_id}"
    if fs.exists(final):
        return False
    staging = f"{base}/{STAGING}/batch={batch_id}"
    write_frame(part, staging, fmt)
    fs.move(staging, final)
    return True


class _HadoopFiles:
    """The driver JVM's Hadoop file system (any scheme Spark reads): classic sessions."""

    def __init__(self, spark) -> None:
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, path: str):
        return self._jvm.org.apache.hadoop.fs.Path(path)

    def exists(self, path: str) -> bool:
        hadoop_path = self._path(path)
        return hadoop_path.getFileSystem(self._conf).exists(hadoop_path)

    def move(self, source: str, target: str) -> None:
        src, dst = self._path(source), self._path(target)
        fs = dst.getFileSystem(self._conf)
        fs.mkdirs(dst.getParent())
        if not fs.rename(src, dst):
            msg = f"could not move {source} to {target}"
            raise OSError(msg)


class _ArrowFiles:
    """pyarrow's file systems (local, S3, GCS, HDFS): a Spark Connect session's
    ``foreachBatch`` runs in a Python process on the server, which has no JVM handle."""

    def _resolve(self, path: str):
        from pyarrow import fs

        return fs.FileSystem.from_uri(path if "://" in path else os.path.abspath(path))

    def exists(self, path: str) -> bool:
        from pyarrow import fs

        filesystem, inner = self._resolve(path)
        return filesystem.get_file_info(inner).type != fs.FileType.NotFound

    def move(self, source: str, target: str) -> None:
        filesystem, inner_source = self._resolve(source)
        _, inner_target = self._resolve(target)
        filesystem.create_dir(inner_target.rsplit("/", 1)[0], recursive=True)
        filesystem.move(inner_source, inner_target)


def _filesystem(df: DataFrame) -> _HadoopFiles | _ArrowFiles:
    from windowkit.spark.session import is_connect

    spark = df.sparkSession
    return _ArrowFiles() if is_connect(spark) else _HadoopFiles(spark)


def write_stream_exactly_once(
    result: DataFrame,
    output: str,
    checkpoint: str,
    split: Splitter,
    on_batch: Callable[[int, dict[str, int]], None] | None = None,
    count_by: str | None = None,
    fmt: str = "parquet",
) -> StreamingQuery:
    """Start ``result`` (a streaming DataFrame) writing each of ``split``'s parts exactly once.

    Parameters
    ----------
    result : DataFrame
        A streaming DataFrame.
    output : str
        The output directory; part ``NAME`` goes to ``output/NAME/batch=N``.
    checkpoint : str
        The query's checkpoint directory.
    split : callable
        Takes a micro-batch's DataFrame, returns ``{name: DataFrame}``.
    on_batch : callable, optional
        Called with the batch id and the counts of ``count_by``'s values in the batch (e.g.
        for a progress line). Not on a Spark Connect session, whose ``foreachBatch`` runs in
        a Python process of the server: there, count the written parts afterwards.
    count_by : str, optional
        The column whose values ``on_batch`` gets counts of.
    fmt : {"parquet", "csv"}
        The format the parts are written in (:func:`write_frame`).

    Returns
    -------
    StreamingQuery
        Started with ``trigger(availableNow=True)``: it processes what is there and stops.
    """

    from windowkit.spark.session import is_connect

    if is_connect(result.sparkSession):
        on_batch = None  # it would run, and print, on the server

    def write(batch: DataFrame, batch_id: int) -> None:
        batch = batch.persist()
        try:
            for name, part in split(batch).items():
                commit_batch(part, f"{output}/{name}", batch_id, fmt)
            if os.environ.get(KILL_AFTER_WRITE_ENV) in (str(batch_id), "first"):
                import signal

                os.killpg(0, signal.SIGKILL)  # the whole driver: Python and its JVM
            if on_batch is not None:
                counts = ({} if count_by is None else
                          {str(r[0]): r[1] for r in batch.groupBy(count_by).count().collect()})
                on_batch(batch_id, counts)
        finally:
            batch.unpersist()

    return (result.writeStream.foreachBatch(write).option("checkpointLocation", checkpoint)
            .trigger(availableNow=True).start())
