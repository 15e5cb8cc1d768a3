"""Exactly-once Parquet output for streaming queries, readable by Spark, pandas and pyarrow.

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

from pyspark.sql import DataFrame
from pyspark.sql.streaming import StreamingQuery

STAGING = "_staging"
#: Test hook: kill the driver (SIGKILL) right after writing this micro-batch (a batch id, or
#: "first": the first one this process writes), before Spark records its commit, to prove that
#: the replay after a restart writes nothing twice.
KILL_AFTER_WRITE_ENV = "WINDOWKIT_TEST_KILL_AFTER_BATCH"

Splitter = Callable[[DataFrame], dict[str, DataFrame]]


def commit_batch(part: DataFrame, base: str, batch_id: int) -> bool:
    """Write ``part`` as ``base/batch=<batch_id>`` exactly once; False if it was already there.

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
    fs, jvm = _filesystem(part, base)
    final = jvm.org.apache.hadoop.fs.Path(f"{base}/batch={batch_id}")
    if fs.exists(final):
        return False
    staging = f"{base}/{STAGING}/batch={batch_id}"
    part.write.mode("overwrite").parquet(staging)
    fs.mkdirs(final.getParent())
    if not fs.rename(jvm.org.apache.hadoop.fs.Path(staging), final):
        msg = f"could not move {staging} to {final}"
        raise OSError(msg)
    return True


def _filesystem(df: DataFrame, path: str):
    spark = df.sparkSession
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), jvm


def write_stream_exactly_once(
    result: DataFrame,
    output: str,
    checkpoint: str,
    split: Splitter,
    on_batch: Callable[[int, dict[str, int]], None] | None = None,
    count_by: str | None = None,
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
        for a progress line).
    count_by : str, optional
        The column whose values ``on_batch`` gets counts of.

    Returns
    -------
    StreamingQuery
        Started with ``trigger(availableNow=True)``: it processes what is there and stops.
    """

    def write(batch: DataFrame, batch_id: int) -> None:
        batch = batch.persist()
        try:
            for name, part in split(batch).items():
                commit_batch(part, f"{output}/{name}", batch_id)
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
