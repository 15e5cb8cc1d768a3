"""The DistCM coordinator: the latest count matrix of every site, summed into one sketch.

The coordinator of Rivetti, Busnel and Mostefaoui (Section 3.5, "DistCM") sums the latest
matrix each site sent. Here it is a plain Spark aggregation over the snapshot stream: the
latest snapshot of each shard is chosen in the JVM (:func:`latest_snapshots`), and one group
sums the few matrices in Python (``depth x width`` cells per shard), in shard order so that
float sums never depend on the order Spark collects them in.
"""

from __future__ import annotations

import functools

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.sketches import CountMin
from windowkit.spark.countmin.sites import SHARD
from windowkit.spark.countmin.snapshots import latest_snapshots

MERGED_COLUMNS = ["shards", "n_seen", "time", "window_start", "window_end", "window_count",
                  "sketch"]


def merge_count_min(snapshots: DataFrame) -> DataFrame:
    """The DistCM coordinator: sum the latest count matrix of every shard into one sketch.

    A lazy Spark aggregation: :func:`latest_snapshots`, then one group summing the matrices.
    Batch DataFrames only. On a stream, run it in ``foreachBatch`` over the union of the
    previous latest snapshots and the new ones, e.g.::

        state = {"latest": None}

        def coordinate(batch, batch_id):
            if state["latest"] is not None:
                batch = state["latest"].unionByName(batch)
            state["latest"] = latest_snapshots(batch).localCheckpoint()
            merged = merge_count_min(state["latest"])
            ...  # estimate_frequency(merged, ...), heavy_hitters(state["latest"], ...)

        snapshots.writeStream.foreachBatch(coordinate).start()

    Parameters
    ----------
    snapshots : DataFrame
        Output of :func:`windowed_count_min` (or any rows with its snapshot columns).

    Returns
    -------
    DataFrame
        One row: ``shards`` (number of shards merged), ``n_seen`` (their samples), ``time``
        (latest snapshot time), ``window_start`` and ``window_end`` (the merged window,
        ``[window_start, window_end)``: every shard's window ends with the same step),
        ``window_count`` (estimated items in the merged window: the mean
        row sum of the matrix), ``sketch`` (the merged :class:`CountMin` as bytes). No row if
        there is no snapshot.

    Examples
    --------
    >>> from windowkit.spark.countmin import windowed_count_min
    >>> df = spark.createDataFrame([("a",), ("b",), ("a",), ("c",)], "item string")
    >>> snaps = windowed_count_min(df, "item", window=10, shards=2, algorithm="simple")
    >>> merge_count_min(snaps).select("shards", "n_seen", "window_count").collect()
    [Row(shards=2, n_seen=4, window_count=4.0)]
    """
    require_batch(snapshots, "snapshots")
    latest = latest_snapshots(snapshots)
    # One aggregation, so the snapshots are computed once; times stay in the JVM (pandas holds
    # nanoseconds and cannot hold a time in year 9999), only the sketches reach Python.
    # SQL text: one expression costs one call to the JVM
    totals = latest.agg(*[F.expr(e) for e in (
        "count(1) AS shards", "sum(n_seen) AS n_seen", "max(`time`) AS `time`",
        "max(window_start) AS window_start", "max(window_end) AS window_end",
        f"sort_array(collect_list(struct({SHARD}, sketch))) AS wk_sketches")])
    summed = _merge_udf()(F.col("wk_sketches.sketch"))  # (Spark calls it once for both)
    return totals.filter("shards > 0").select(
        *MERGED_COLUMNS[:5], *[summed.getField(name).alias(name) for name in MERGED_COLUMNS[5:]])


@functools.lru_cache(maxsize=1)
def _merge_udf():
    schema = T.StructType([T.StructField("window_count", T.DoubleType()),
                           T.StructField("sketch", T.BinaryType())])

    # no type hints: PySpark would try to read a pandas UDF from them and warn on the console
    @F.udf(returnType=schema)
    def merge(blobs):
        merged = sum_sketches(blobs)
        return window_count(merged), merged.to_bytes()

    return merge


def sum_sketches(blobs: list[bytes]) -> CountMin:
    """The sum of serialized sketches, in the order given.

    Examples
    --------
    >>> a = CountMin(1, 4); a.update([1, 1])
    >>> sum_sketches([a.to_bytes(), a.to_bytes()]).estimate([1]).tolist()
    [4]
    """
    sketches = [CountMin.from_bytes(bytes(b)) for b in blobs]
    total = sketches[0]
    for other in sketches[1:]:
        total.merge(other)
    return total


def window_count(cm: CountMin) -> float:
    """The items in a merged window: the mean row sum of its matrix.

    Examples
    --------
    >>> a = CountMin(2, 4); a.update([1, 2, 3])
    >>> window_count(a)
    3.0
    """
    return float(np.asarray(cm.counts, dtype=np.float64).sum(axis=1).mean())


def require_batch(df: DataFrame, name: str) -> None:
    """Refuse a streaming DataFrame where a coordinator function needs a batch one.

    Examples
    --------
    >>> require_batch(spark.readStream.format("rate").load(), "snapshots")
    Traceback (most recent call last):
    ...
    ValueError: `snapshots` must be a batch DataFrame; on a stream call this function inside ...
    """
    if df.isStreaming:
        msg = (f"`{name}` must be a batch DataFrame; on a stream call this function inside "
               "foreachBatch (see merge_count_min)")
        raise ValueError(msg)
