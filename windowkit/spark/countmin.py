"""Windowed Count-Min on Spark: DistCM sites as Spark shards, a Spark aggregation as coordinator.

The distributed Count-Min of Rivetti, Busnel and Mostefaoui (Section 3.5, "DistCM") runs one
windowed sketch per *site* and sends each site's count matrix to a coordinator; the coordinator
sums the latest matrix of every site. Here:

* :func:`windowed_count_min` assigns every row to one of ``shards`` sites and runs a windowed
  sketch per site through the generic adapter (:func:`windowkit.spark.adapter.run_operator`,
  ``mapInArrow`` on batch DataFrames, ``transformWithStateInPandas`` on streaming ones). Its
  output is the snapshot stream: ``shard, seq, n_seen, time, sketch``. On a batch DataFrame
  with the default cadence, the variants whose state is the sum of its parts (``"simple"``,
  ``"proportional"``, ``"perfect"``, :data:`MERGEABLE`) skip the shuffle of rows; the snapshots
  are the same bytes. That path runs when the function is called and returns the snapshots as a
  small local DataFrame: a JVM count of each site's rows, then one pass over the rows the final
  window depends on, which a plain time column lets the file scan find by its statistics
  (Parquet skips the row groups before them). Simple's and Proportional's state is the count
  matrix of the last one or two window blocks, which Spark's own ``count_min_sketch`` builds in
  the JVM per (site, block) (:data:`JVM_SKETCHED`); Perfect's rows are sketched per input
  partition and site in Python and the parts merged. Splitter's sub-cells are not a sum of
  parts, so its sites see their rows in order.
* :func:`merge_count_min` is the coordinator: the latest snapshot of each shard
  (:func:`latest_snapshots`), summed by one Spark aggregation into a single Count-Min.
* :func:`estimate_frequency` and :func:`heavy_hitters` query merged sketches.

One window whatever the shards (issue #16, point 7). Every shard's sketch is time-based over
the *global* steps: for ``unit="ticks"`` the ticks of the event time, for ``unit="samples"`` the
position of each item in the whole stream (its sequence number, one tick per position). Every
shard's clock is moved to the same last step before its final snapshot (the input's last
position or tick on a batch DataFrame, the watermark on a stream), so each shard's window is the
global steps ``(P - N, P]`` and, Count-Min being linear, the sum of the shards' matrices is the
matrix of the global window: exactly the same for any number of shards with ``"perfect"``,
``"simple"`` and ``"proportional"`` (up to float rounding), and within Splitter's approximation
for ``"splitter"`` (each shard approximates its share of the window; its sub-cells are not
linear). The default number of shards is a constant, not the machine's core count, so a command
gives the same result on every machine.

Items are hashed in the JVM with ``xxhash64`` (integral columns as ``long``, every other type as
its string form), so only int64 keys reach the sketches. Every sketch hashes those keys with
Spark's Count-Min family (``hashing="spark"``, seeded by ``seed``), the one Spark's
``count_min_sketch`` uses, so a matrix built in the JVM and one built by the core from the same
keys are equal cell for cell. Querying hashes the queried items with the same expressions.

Snapshot cadence: by default each shard sends one snapshot at the end of the input (batch) or
per micro-batch when the watermark moves (stream). ``snapshot_every=s`` adds the paper's periodic
snapshots every ``s`` samples (``ceil(epsilon N)`` in the paper); Theorem 7 then bounds what the
coordinator misses at any time: every cell of the merged matrix is within ``shards * s`` of the sum
of the sites' current matrices.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterator
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.durations import to_micros
from windowkit.core.sketches import (
    CountMin,
    CountMinConfig,
    PerfectWindowCM,
    ProportionalWindowCM,
    SimpleWindowCM,
    SplitterWindowCM,
)
from windowkit.core.sketches._hashing import spark_multipliers
from windowkit.core.sketches._window import WindowConfig, WindowedCountMin
from windowkit.core.sketches.count_min import estimate_counts
from windowkit.core.sketches.operator import (
    DEFAULT_DELTA,
    DEFAULT_EPSILON,
    ITEM,
    WindowedCountMinOperator,
)
from windowkit.core.validation import check_choice, check_in_range, check_int
from windowkit.spark.adapter import (
    DETAIL_OUT,
    REJECTED,
    OperatorJob,
    row_json,
    run_operator,
)
from windowkit.spark.event_time import TimeUnit, column_type, event_time
from windowkit.spark.session import is_connect

Algorithm = Literal["splitter", "proportional", "simple", "perfect"]
"""The windowed variants: ``"splitter"``, ``"proportional"``, ``"simple"``, ``"perfect"``."""

ALGORITHMS: dict[str, type[WindowedCountMin]] = {
    "splitter": SplitterWindowCM,
    "proportional": ProportionalWindowCM,
    "simple": SimpleWindowCM,
    "perfect": PerfectWindowCM,
}

DEFAULT_SHARDS = 4
"""Sites when ``shards`` is not given: a constant, so results never depend on the machine."""

SHARD = "shard"
ITEM_KEY = "item_key"
POSITION = "position"
SNAPSHOT_COLUMNS = ["shard", "seq", "n_seen", "time", "sketch"]
MERGED_COLUMNS = ["shards", "n_seen", "time", "window_count", "sketch"]
# internal columns (the adapter leaves "wk_" columns out of a rejected row's JSON)
_POS = "wk_cm_position"
_MID = "wk_cm_row"
#: For unit="samples" one position is one millisecond of the operators' clock (µs): Spark's
#: watermark moves in milliseconds, so a stream's watermark can then pass every position.
POSITION_MICROS = 1000


# ------------------------------------------------------------------ site assignment and hashing
def item_key(col: str | Column, dtype: T.DataType | None = None) -> Column:
    """The JVM hash of an item column, the int64 key the core sketches see.

    Integral columns are hashed as ``long`` (so an ``int`` column and a Python ``int`` agree),
    binary columns as bytes, every other type as its string form. Null items hash to ``42``
    (Spark's seed) but are never counted: :func:`windowed_count_min` rejects them.

    Parameters
    ----------
    col : str or Column
        The item column.
    dtype : DataType, optional
        Its type; needed to normalise integral columns given as a Column.

    Returns
    -------
    Column
        A ``long`` column.

    Examples
    --------
    >>> df = spark.createDataFrame([(1, "1")], "i int, s string")
    >>> df.select(item_key("i", df.schema["i"].dataType), item_key("s")).first()[:]
    (-7001672635703045582, -928762887014768240)
    """
    column = F.col(col) if isinstance(col, str) else col
    if isinstance(dtype, T.IntegralType) or isinstance(dtype, T.BooleanType):
        column = column.cast("long")
    elif isinstance(dtype, T.BinaryType):
        pass
    elif not isinstance(dtype, T.StringType):
        column = column.cast("string")
    return F.xxhash64(column)


def _is_sequence(df: DataFrame, time: str | Column | None, time_unit: str | None) -> bool:
    """Whether ``time`` is an integer sequence number (no ``time_unit``): its own position."""
    return (time is not None and time_unit is None
            and isinstance(column_type(df, time), T.IntegralType))


def count_min_sites(
    df: DataFrame,
    item: str | Column,
    time: str | Column | None = None,
    by: str | Column | None = None,
    shards: int | None = None,
    *,
    unit: Literal["samples", "ticks"] = "samples",
    time_unit: TimeUnit | None = None,
) -> DataFrame:
    """``df`` with the columns :func:`windowed_count_min` derives: ``shard``, ``item_key`` and
    ``position``.

    * ``shard``: the DistCM site of the row, in ``[0, shards)``: ``pmod(xxhash64(by), shards)``
      if ``by`` is given; else, for ``unit="samples"``, its position in the stream modulo
      ``shards`` (round robin, as a load balancer would spread the stream; a rejected row with
      no position goes to site 0; sequence numbers that all share a factor with ``shards``
      use only some sites, which costs Splitter and streams parallelism, never accuracy), and
      for ``unit="ticks"`` ``pmod(xxhash64(position), shards)`` (rows at the same instant
      share a site). Deterministic: the same rows give the same sites whatever the
      partitioning.
    * ``item_key``: :func:`item_key` of ``item``.
    * ``position``: the step the row's sketch update happens at, as int64 microseconds the
      core operator reads as its time. ``unit="ticks"``: the event time in µs. ``unit="samples"``:
      :data:`POSITION_MICROS` times the row's position in the whole stream: ``time`` itself if
      it is an integer column given without ``time_unit`` (a sequence number); the rank of
      ``time`` (ties in input order) if it is a timestamp or an integer with ``time_unit``
      (batch only); without ``time`` (batch only), the row's place in the input (partition
      order, then row order within it).

    Examples
    --------
    >>> df = spark.createDataFrame([("a", 1), ("b", 2)], "item string, t long")
    >>> sorted(r.shard for r in count_min_sites(df, "item", "t", shards=4).collect())
    [1, 2]
    >>> [r.position for r in count_min_sites(df, "item", "t").collect()]
    [1000, 2000]
    """
    shards = check_int("shards", DEFAULT_SHARDS if shards is None else shards, 1)
    prepared, key, site = _prepare(df, item, time, by, shards, unit, time_unit)
    return prepared.withColumns({SHARD: site, ITEM_KEY: key, POSITION: F.col(_POS)}
                                ).drop(_POS, _MID)


def _prepare(
    df: DataFrame, item: str | Column, time: str | Column | None, by: str | Column | None,
    shards: int, unit: str, time_unit: str | None,
) -> tuple[DataFrame, Column, Column]:
    """``(df with the µs step column _POS, item_key, shard)``; see :func:`count_min_sites`."""
    key = item_key(item, column_type(df, item))
    if unit == "ticks":
        if time is None:
            msg = "`time` is required with unit='ticks'"
            raise ValueError(msg)
        df = df.withColumn(_POS, event_time(df, time, time_unit).micros())
    elif time is None:
        if df.isStreaming:
            msg = ("`time` is required for a streaming DataFrame (its rows have no order "
                   "otherwise); pass an integer sequence column, or use unit='ticks' with an "
                   "event time")
            raise ValueError(msg)
        df = _input_positions(df)
    elif _is_sequence(df, time, time_unit):
        df = df.withColumn(_POS, (F.col(time) if isinstance(time, str) else time).cast("long"))
    else:
        micros = event_time(df, time, time_unit).micros()
        if df.isStreaming:
            msg = ("a count-based window (unit='samples') over a stream needs each row's "
                   "position in the stream: pass an integer sequence column as `time` (without "
                   "`time_unit`), or use unit='ticks'")
            raise ValueError(msg)
        # The rank in time order, ties in input order: one sort of all rows in one partition.
        order = Window.orderBy(F.col("wk_cm_micros").asc_nulls_first(), F.col(_MID))
        df = (df.withColumns({_MID: F.monotonically_increasing_id(), "wk_cm_micros": micros})
              .withColumn(_POS, F.when(F.col("wk_cm_micros").isNotNull(),
                                       F.row_number().over(order) - 1))
              .drop("wk_cm_micros"))
    if unit == "samples":
        df = df.withColumn(_POS, F.col(_POS) * F.lit(POSITION_MICROS))
    if by is None and unit == "samples":
        # round robin over the stream's positions: no hash to compute, no item column to read
        # when counting each site's rows (a null position is a rejected row's, sent to site 0)
        site = F.expr(f"coalesce(pmod({_POS} div {POSITION_MICROS}, {shards}), 0)")
    elif by is None:
        # rows at one instant share a site; instants spread evenly
        site = F.pmod(F.xxhash64(F.col(_POS)), F.lit(shards))
    else:
        site = F.pmod(item_key(by, column_type(df, by)), F.lit(shards))
    return df, key, site.cast("int")


def _pushable_lower_bound(df: DataFrame, time: str | Column | None, unit: str,
                          time_unit: str | None) -> Callable[[int], Column | None]:
    """For a step cutoff (µs), a predicate on the plain time column that every row with
    ``step >= cutoff`` satisfies and that Spark pushes into the file scan, so row groups
    wholly before the cutoff are not read; None where there is none (positions by rank or
    input order, expressions, wall-clock times)."""
    if not isinstance(time, str):
        return lambda cutoff: None
    if unit == "ticks":
        clock = event_time(df, time, time_unit)
        return clock.at_least
    if _is_sequence(df, time, time_unit) and POSITION_MICROS == 1000:
        # a position is one millisecond of the operators' clock: the sequence column's
        # bound is that of a time in milliseconds
        return event_time(df, time, "ms").at_least
    return lambda cutoff: None


def _input_positions(df: DataFrame) -> DataFrame:
    """``df`` with ``_POS``: each row's place in the input, partition by partition (one small
    counting job first: the rows of every partition)."""
    pid = F.spark_partition_id()
    counts = dict(df.select(pid.alias("p")).groupBy("p").count().collect())
    offsets, total = [], 0
    for p in range(max(counts, default=-1) + 1):
        offsets.append(total)
        total += counts.get(p, 0)
    if not offsets:
        return df.withColumn(_POS, F.lit(None).cast("long"))
    # monotonically_increasing_id is (partition << 33) + row number within the partition
    offset = F.element_at(F.array(*[F.lit(o) for o in offsets]), pid + 1).cast("long")
    within = F.monotonically_increasing_id() - F.shiftleft(pid.cast("long"), 33)
    return df.withColumn(_POS, offset + within)


# ------------------------------------------------------------------ the per-site operator
def make_operator(
    window: int,
    *,
    unit: str = "samples",
    tick: str | int | None = None,
    algorithm: str = "splitter",
    epsilon: float = DEFAULT_EPSILON,
    delta: float = DEFAULT_DELTA,
    snapshot_every: int | None = None,
    seed: int = 0,
    tau: float | None = None,
    mu: float | None = None,
    end_time: int | None = None,
) -> WindowedCountMinOperator:
    """The core operator one site of :func:`windowed_count_min` runs (validates parameters).

    It is the adapter's factory (each Spark group is one site), so running it on the rows of
    one shard (:func:`count_min_sites`, ``position`` as the time, in ``position`` order)
    reproduces that shard's Spark snapshots with the core alone. Its sketch is always
    time-based (for ``unit="samples"`` one tick is one position of the global stream) and
    hashes with Spark's Count-Min family (``hashing="spark"``).

    Parameters
    ----------
    end_time : int, optional
        The step (µs; :data:`POSITION_MICROS` per position for ``unit="samples"``) the input
        ends at: the final snapshot is of the window ending there.

    Examples
    --------
    >>> op = make_operator(1000, algorithm="proportional", epsilon=0.01, delta=0.25)
    >>> type(op.sketch).__name__, op.sketch.depth, op.sketch.width, op.snapshot_every
    ('ProportionalWindowCM', 2, 272, None)
    >>> make_operator(1000, epsilon=1.5)
    Traceback (most recent call last):
    ...
    ValueError: `epsilon` must be in (0, 1); got 1.5
    """
    check_choice("algorithm", algorithm, tuple(ALGORITHMS))
    check_choice("unit", unit, ("samples", "ticks"))
    check_in_range("epsilon", epsilon, 0, 1, low_open=True, high_open=True)
    check_in_range("delta", delta, 0, 1, low_open=True, high_open=True)
    check_int("window", window, 1, 2**62)
    params: dict[str, float] = {}
    for name, value in (("tau", tau), ("mu", mu)):
        if value is not None:
            if algorithm != "splitter":
                msg = (f"`{name}` is a parameter of algorithm='splitter'; "
                       f"got algorithm={algorithm!r}")
                raise ValueError(msg)
            params[name] = value
    if unit == "ticks":
        if tick is None:
            msg = "`tick` is required with unit='ticks' (e.g. tick='1 second')"
            raise ValueError(msg)
        tick_micros = to_micros(tick, "tick")
    elif tick is not None:
        msg = f"`tick` is only for unit='ticks'; got tick={tick!r} with unit={unit!r}"
        raise ValueError(msg)
    else:
        tick_micros = POSITION_MICROS  # one tick per position of the global stream
    # Spark's hash family: Simple's and Proportional's matrices are built in the JVM by Spark's
    # count_min_sketch on a batch, and every sketch of a job must hash alike to merge
    sketch = ALGORITHMS[algorithm].from_error(epsilon, delta, window=window, seed=seed,
                                              unit="ticks", hashing="spark", **params)
    return WindowedCountMinOperator(sketch, snapshot_every, tick_micros, end_time)


# ------------------------------------------------------------------ mergeable sketches, batch

MERGEABLE = frozenset({"simple", "proportional", "perfect"})
"""Variants whose site state is the sum of its parts: a batch with the default cadence sketches
the rows of the last windows without a shuffle of rows, and merges the sketches per site."""
JVM_SKETCHED = frozenset({"simple", "proportional"})
"""Mergeable variants whose state is the Count-Min matrix of whole window blocks: on a batch
with the default cadence, Spark's own ``count_min_sketch`` builds those matrices in the JVM (the
sketches hash with Spark's family, ``hashing="spark"``, cell for cell alike)."""

_PART_FIELDS = [("wk_site", pa.int32()), ("part", pa.binary()), ("wk_last", pa.int64())]
_PART_SCHEMA = T.StructType([T.StructField("wk_site", T.IntegerType()),
                             T.StructField("part", T.BinaryType()),
                             T.StructField("wk_last", T.LongType())])
_SNAPSHOT_SCHEMA = T.StructType([
    T.StructField(SHARD, T.IntegerType()), T.StructField("seq", T.LongType()),
    T.StructField("n_seen", T.LongType()), T.StructField("time", T.LongType()),
    T.StructField("sketch", T.BinaryType()), T.StructField(REJECTED, T.StringType()),
    T.StructField(DETAIL_OUT, T.StringType())])
#: Up to this many sites, the row counts are conditional aggregates of one global aggregation
#: (no shuffle, no second stage); beyond, a group by site.
_STATS_BY_CONDITION = 64
#: Spark's count_min_sketch takes a confidence, ``1 - 2**-depth`` must stay below 1 in a double.
_JVM_MAX_DEPTH = 40
_LONG_MIN = -(2**63)


def _merged_partials(prepared: DataFrame, key: Column, site: Column, step: Column,
                     factory: Callable[[], WindowedCountMinOperator], shards: int,
                     lower_bound: Callable[[int], Column | None], *, in_jvm: bool
                     ) -> tuple[DataFrame | None, DataFrame, list[tuple[Any, ...]]]:
    """Every site's final snapshot, as the adapter's per-site operator gives it, from sketches
    of the rows of the last windows, merged per site; malformed rows set aside in the JVM.
    Returns the snapshots (a local relation, None if there is none), the malformed rows (lazy)
    and the snapshot rows themselves (``shard, seq, n_seen, time, sketch``, the time as the µs
    step).

    A time-based window is the sum of its parts. Two jobs, run now. One aggregation in the JVM
    counts each site's rows and finds the input's last step. Then only the rows the final
    window state depends on are read (a plain time column lets the file scan skip the others):
    for Simple and Proportional, whose state is the count matrix of the last one or two window
    blocks, Spark's ``count_min_sketch`` sketches each (site, block) in the JVM; for Perfect,
    each input partition sketches its rows per site in Python and the parts are merged. The
    driver then moves every site's clock to the input's last step and takes the snapshot. Rows
    are never shuffled; only sketches are. ``in_jvm``: the variant's matrices may be built by
    Spark (:data:`JVM_SKETCHED`); beyond 40 rows, Spark's confidence cannot be told apart from 1
    in a double, and the rows go to Python too.
    """
    counts, end = _site_counts(prepared, site, step, shards)
    snapshots: list[tuple[Any, ...]] = []
    if counts:
        template = factory()
        config = template.sketch.config
        tick, window = template.tick_micros, config.window
        end_tick = end // tick
        in_jvm = in_jvm and config.depth <= _JVM_MAX_DEPTH
        if isinstance(template.sketch, ProportionalWindowCM):
            first_tick = (end_tick // window - 1) * window  # the previous block
        elif isinstance(template.sketch, SimpleWindowCM):
            first_tick = end_tick // window * window
        else:
            first_tick = end_tick - window + 1
        cutoff = max(first_tick * tick, _LONG_MIN)
        wanted = step >= F.lit(cutoff)
        # implied by the exact filter, and taken by the file scan (at the clamp: every row)
        skip = lower_bound(cutoff) if cutoff > -(2**62) else None
        recent = prepared.filter(wanted if skip is None else skip & wanted).select(
            site.alias("wk_site"), step.alias("wk_step"), key.alias("wk_item"))
        if in_jvm:
            states = _jvm_block_sketches(recent, template.sketch, tick)
        else:
            states = _python_site_sketches(recent, factory)
        snapshots = _final_snapshots(factory, counts, states, end)
    session = prepared.sparkSession
    # from pandas through Arrow: the JVM reads the rows itself (a list would be a Python RDD
    # that every later job unpickles in a Python worker)
    out = (session.createDataFrame(pd.DataFrame(snapshots, columns=_SNAPSHOT_SCHEMA.names),
                                   _SNAPSHOT_SCHEMA) if snapshots else None)
    # Malformed rows stay in the JVM; a reader of the snapshots alone (merge_count_min keeps
    # `rejected` null) never scans the input again: the optimizer drops this branch.
    rejected = prepared.filter(step.isNull()).select(
        site.alias(SHARD), *[F.lit(None).cast(f.dataType).alias(f.name)
                             for f in _SNAPSHOT_SCHEMA.fields[1:5]],
        F.lit("malformed").alias(REJECTED), row_json(prepared).alias(DETAIL_OUT))
    return out, rejected, [r[:5] for r in snapshots]


def _site_counts(prepared: DataFrame, site: Column, step: Column,
                 shards: int) -> tuple[dict[int, int], int | None]:
    """``({site: rows}, last step)`` of the sites that have rows, in one JVM aggregation."""
    rows = prepared.select(site.alias("wk_site"), step.alias("wk_step"))
    if shards <= _STATS_BY_CONDITION:
        # SQL text: one py4j call per aggregate, where F.when and F.col take many
        totals = rows.agg(*[F.expr(f"count(IF(wk_site = {s}, wk_step, NULL)) AS n{s}")
                            for s in range(shards)], F.expr("max(wk_step) AS last")).collect()[0]
        counts = {s: int(totals[f"n{s}"]) for s in range(shards) if totals[f"n{s}"]}
        return counts, totals["last"]
    per_site = (rows.filter(F.col("wk_step").isNotNull()).groupBy("wk_site")
                .agg(F.count(F.lit(1)).alias("n"), F.max("wk_step").alias("last")).collect())
    counts = {int(r["wk_site"]): int(r["n"]) for r in per_site}
    return counts, max((int(r["last"]) for r in per_site), default=None)


def _floor_div(column: str, divisor: int) -> str:
    """SQL for ``floor(column / divisor)`` in exact long arithmetic (``div`` truncates)."""
    return (f"({column} div {divisor}) - "
            f"IF({column} < 0 AND {column} % {divisor} != 0, 1, 0)")


def _jvm_block_sketches(recent: DataFrame, sketch: WindowedCountMin,
                        tick: int) -> dict[int, tuple[dict[int, np.ndarray], int]]:
    """``{site: ({block: counts}, last step)}``: Spark's ``count_min_sketch`` of every (site,
    window block) of ``recent``'s rows, one grouped JVM aggregation."""
    config = sketch.config
    # Spark sizes its sketch as ceil(2 / eps) x ceil(log2(1 / (1 - confidence))): aim at the
    # middle of the interval that gives this sketch's shape
    eps = 2 / (config.width - 0.5)
    confidence = 1 - 2.0 ** -(config.depth - 0.5)
    block = F.expr(_floor_div(f"({_floor_div('wk_step', tick)})", config.window))
    sketches = F.count_min_sketch("wk_item", F.lit(eps), F.lit(confidence), F.lit(config.seed))
    rows = recent.groupBy("wk_site", block.alias("wk_block")).agg(
        sketches.alias("wk_cms"), F.max("wk_step").alias("wk_last")).collect()
    states: dict[int, tuple[dict[int, np.ndarray], int]] = {}
    for row in rows:
        site = int(row["wk_site"])
        blocks, last = states.get(site, ({}, _LONG_MIN))
        blocks[int(row["wk_block"])] = spark_count_min_counts(bytes(row["wk_cms"]), config)
        states[site] = (blocks, max(last, int(row["wk_last"])))
    return states


def spark_count_min_counts(blob: bytes, config: CountMinConfig | WindowConfig) -> np.ndarray:
    """The count matrix of a sketch serialized by Spark's ``CountMinSketch`` (the bytes of the
    ``count_min_sketch`` aggregate), checked against ``config``: same shape, and Spark's hash
    family with the same seed.

    Spark writes, big-endian: the version (int, 1), the total count (long), depth and width
    (ints), the ``depth`` row multipliers (longs), then the table row by row (longs).

    Examples
    --------
    >>> from windowkit.core.sketches import CountMin
    >>> df = spark.createDataFrame([(5,), (5,), (9,)], "item long")
    >>> blob = df.agg(F.count_min_sketch("item", F.lit(2 / 6.5), F.lit(1 - 2 ** -1.5),
    ...                                  F.lit(3))).first()[0]
    >>> cm = CountMin(2, 7, seed=3, hashing="spark")
    >>> cm.update([5, 5, 9])
    >>> np.array_equal(spark_count_min_counts(blob, cm.config), cm.counts)
    True
    """
    depth, width = config.depth, config.width
    expected = 20 + 8 * depth * (width + 1)
    version = int(np.frombuffer(blob[:4], dtype=">i4")[0]) if len(blob) >= 20 else None
    shape = tuple(np.frombuffer(blob[12:20], dtype=">i4").tolist()) if version else None
    if len(blob) != expected or version != 1 or shape != (depth, width):
        msg = (f"not a version-1 Spark Count-Min sketch of shape {(depth, width)} "
               f"({len(blob)} bytes)")
        raise ValueError(msg)
    multipliers = np.frombuffer(blob[20:20 + 8 * depth], dtype=">i8")
    if config.hashing != "spark" or not np.array_equal(
            multipliers, spark_multipliers(config.seed, depth)):
        msg = f"the Spark sketch does not hash like {config!r}"
        raise ValueError(msg)
    table = np.frombuffer(blob[20 + 8 * depth:], dtype=">i8")
    return table.astype(np.int64).reshape(depth, width)


def _python_site_sketches(recent: DataFrame, factory: Callable[[], WindowedCountMinOperator]
                          ) -> dict[int, tuple[WindowedCountMin, int]]:
    """``{site: (sketch, last step)}``: each input partition sketches its rows per site in
    Python, and one Spark group per site merges its parts (a part holds the rows of its
    window, so many partitions' parts would not fit on the driver)."""
    parts = recent.mapInArrow(functools.partial(_sketch_partition, factory), _PART_SCHEMA)

    def merge(site_parts: pd.DataFrame) -> pd.DataFrame:
        return _merge_site_parts(factory, site_parts)

    merged = parts.groupBy("wk_site").applyInPandas(merge, _PART_SCHEMA).collect()
    return {int(row["wk_site"]): (factory().sketch.from_bytes(bytes(row["part"])),
                                  int(row["wk_last"])) for row in merged}


def _merge_site_parts(factory: Callable[[], WindowedCountMinOperator],
                      site_parts: pd.DataFrame) -> pd.DataFrame:
    """One site's parts summed into one (clocks moved to the latest part's)."""
    sketch = factory().sketch
    for blob in site_parts["part"]:
        sketch.merge(type(sketch).from_bytes(bytes(blob)))
    return pd.DataFrame({"wk_site": [int(site_parts["wk_site"].iloc[0])],
                         "part": [sketch.to_bytes()],
                         "wk_last": [int(site_parts["wk_last"].max())]})


def _sketch_partition(factory: Callable[[], WindowedCountMinOperator],
                      batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One part per site present in this input partition: the sketch of its rows."""
    batches = list(batches)
    if not batches:
        return
    table = pa.Table.from_batches(batches)
    if not table.num_rows:
        return
    sites = table.column("wk_site").to_numpy()
    steps = table.column("wk_step").to_numpy()
    items = table.column("wk_item").to_numpy()
    present = np.flatnonzero(np.bincount(sites)).tolist()
    parts: dict[str, list[Any]] = {name: [] for name, _ in _PART_FIELDS}
    for site in present:
        mine = sites == site if len(present) > 1 else slice(None)
        site_steps, site_items = steps[mine], items[mine]
        if np.any(site_steps[1:] < site_steps[:-1]):  # input read in time order needs no sort
            order = np.argsort(site_steps, kind="stable")
            site_steps, site_items = site_steps[order], site_items[order]
        operator = factory()
        operator.sketch.update(site_items, ticks=site_steps // operator.tick_micros)
        parts["wk_site"].append(site)
        parts["part"].append(operator.sketch.to_bytes())
        parts["wk_last"].append(int(site_steps[-1]))
    yield pa.RecordBatch.from_pydict(parts, schema=pa.schema(_PART_FIELDS))


def _final_snapshots(factory: Callable[[], WindowedCountMinOperator], counts: dict[int, int],
                     states: dict[int, tuple[Any, int]], end: int) -> list[tuple[Any, ...]]:
    """Each site's snapshot of the window ending at the input's last step ``end``: its sketch
    (per-block matrices to load, or a sketch) at its last row, moved to ``end``; a site whose
    rows all lie before the last windows sends its empty window."""
    snapshots = []
    for site in sorted(counts):
        operator = factory()
        operator.n_seen, operator.last_time = counts[site], end
        if site in states:
            state, operator.last_time = states[site]
            now = operator.last_time // operator.tick_micros
            if isinstance(state, dict):
                operator.sketch.load_blocks(now, state, counts[site])
            else:
                operator.sketch = state
        operator.sketch.n_samples = operator.n_seen
        operator.end_time = end
        snapshot = operator.finish().iloc[0]
        snapshots.append((site, int(snapshot["seq"]), int(snapshot["n_seen"]),
                          int(snapshot["time"]), bytes(snapshot["sketch"]), None, None))
    return snapshots


# ------------------------------------------------------------------ public functions
def windowed_count_min(
    df: DataFrame,
    item: str | Column,
    time: str | Column | None = None,
    *,
    window: int,
    unit: Literal["samples", "ticks"] = "samples",
    tick: str | int | None = None,
    algorithm: Algorithm = "splitter",
    epsilon: float = DEFAULT_EPSILON,
    delta: float = DEFAULT_DELTA,
    by: str | Column | None = None,
    shards: int | None = None,
    snapshot_every: int | None = None,
    late: str | None = "1 minute",
    seed: int = 0,
    tau: float | None = None,
    mu: float | None = None,
    time_unit: TimeUnit | None = None,
) -> DataFrame:
    """Windowed Count-Min over the last ``window`` items (or ticks), kept by DistCM sites.

    The rows are spread over ``shards`` sites; each keeps a windowed sketch of its rows over
    the *global* steps and sends its count matrix as a snapshot; :func:`merge_count_min` sums
    the latest snapshot of every site into the sketch of the whole stream's window (see the
    module docstring: the window is the one given, whatever ``shards`` and ``by``).

    Parameters
    ----------
    df : DataFrame
        Batch or streaming input.
    item : str or Column
        The items (hashed in the JVM, see :func:`item_key`). Null items are not counted: they
        come out with ``rejected = "malformed"``.
    time : str or Column, optional
        ``unit="samples"``: the order of the items: an integer sequence number (without
        ``time_unit``; the window is the positions ``(P - N, P]`` below the largest one ``P``,
        i.e. the last ``N`` items when the numbers are consecutive), or an event time
        (timestamp, timestamp string, or integer with ``time_unit``; batch only: rows are
        ranked by it in one partition); without it (batch only), the input's order.
        ``unit="ticks"``: the event time (required), ticks are ``time // tick``.
    window : int
        ``N``, the window in samples (``unit="samples"``) or ticks (``unit="ticks"``).
    unit : {"samples", "ticks"}
        Count-based or time-based window.
    tick : str or int, optional
        Tick length for ``unit="ticks"``: ``"1 second"``, ``"1 day"``, or microseconds.
    algorithm : {"splitter", "proportional", "simple", "perfect"}
        The windowed variant (``"perfect"`` stores the window: O(N) memory per site).
    epsilon, delta : float
        In (0, 1): ``ceil(e / epsilon)`` columns and ``ceil(log2(1 / delta))`` rows
        (defaults 0.01 and 0.25, the CLI's too).
    by : str or Column, optional
        Site id column (the paper's nodes): rows are routed to ``pmod(xxhash64(by), shards)``.
        It decides where rows are sketched, not the window.
    shards : int, optional
        Number of sites ``k`` (default :data:`DEFAULT_SHARDS`); each runs in its own Spark
        group. Keep it fixed for the life of a streaming checkpoint.
    snapshot_every : int, optional
        Also snapshot every this many samples per site (the paper's DistCM period is
        ``ceil(epsilon * N)``); default: one snapshot per site at the end of the input, or per
        micro-batch on a stream.
    late : str, optional
        Streaming only: watermark delay (for a sequence number, one millisecond per position:
        ``"10 seconds"`` is 10,000 positions); rows behind the watermark come out with
        ``rejected = "late"`` and are not counted.
    seed : int
        Hash seed of the sketches, in ``[0, 2**31 - 1]`` (Spark's Count-Min family takes an
        ``int``; sketches merge only with equal seeds).
    tau, mu : float, optional
        Splitter's parameters (paper defaults 0.05 and 1.5).
    time_unit : {"s", "ms", "us", "ns"}, optional
        The unit of an integer event-time column (required with ``unit="ticks"``).

    Returns
    -------
    DataFrame
        ``shard`` (int), ``seq``, ``n_seen`` (samples consumed by the shard), ``time`` (the
        window's last step: for ``unit="samples"`` a position, ``long``; for ticks a time in
        the input's kind), ``sketch`` (a :class:`CountMin` as bytes), ``rejected`` and
        ``detail`` (null, or ``"malformed"``/``"late"`` and the row as JSON; a rejected row's
        other columns are null except ``shard``, the site it was routed to). On a batch
        DataFrame with a :data:`MERGEABLE` variant and the default cadence, the sketches are
        computed by this call (two Spark jobs); the rejected rows stay lazy.

    Raises
    ------
    ValueError
        On a bad parameter, naming it (before any Spark job runs).

    Examples
    --------
    >>> df = spark.createDataFrame([(i % 3, i) for i in range(12)], "item int, t long")
    >>> snaps = windowed_count_min(df, "item", "t", window=6, shards=2, algorithm="perfect")
    >>> snaps.orderBy("shard").select("shard", "n_seen", "time").collect()
    [Row(shard=0, n_seen=6, time=11), Row(shard=1, n_seen=6, time=11)]
    >>> estimate_frequency(merge_count_min(snaps), df.select("item").distinct(), "item"
    ...                    ).orderBy("item").collect()
    [Row(item=0, estimate=2), Row(item=1, estimate=2), Row(item=2, estimate=2)]
    """
    params = {"unit": unit, "tick": tick, "algorithm": algorithm, "epsilon": epsilon,
              "delta": delta, "snapshot_every": snapshot_every, "seed": seed, "tau": tau,
              "mu": mu}
    make_operator(window, **params)  # validates before any Spark job runs
    shards = check_int("shards", DEFAULT_SHARDS if shards is None else shards, 1)
    prepared, key, site = _prepare(df, item, time, by, shards, unit, time_unit)
    item_col = F.col(item) if isinstance(item, str) else item
    step = F.when(item_col.isNotNull(), F.col(_POS))
    columns = _snapshot_columns(df, time, unit, time_unit)
    if not df.isStreaming and snapshot_every is None and algorithm in MERGEABLE:
        factory = functools.partial(make_operator, window, **params)
        local, rejected, rows = _merged_partials(
            prepared, key, site, step, factory, shards,
            _pushable_lower_bound(df, time, unit, time_unit), in_jvm=algorithm in JVM_SKETCHED)
        rejected = rejected.select(*columns)
        if local is None:
            return rejected
        local = local.select(*columns)
        out = local.union(rejected)
        _LOCAL_SNAPSHOTS[out] = (local, rows)
        return out
    if not df.isStreaming:
        # every site's last window ends at the input's last step, not at its own last row
        params["end_time"] = prepared.agg(F.max(step)).first()[0]
    # The site is the adapter's shard: each Spark group runs exactly one site's operator.
    job = OperatorJob(factory=functools.partial(make_operator, window, **params),
                      inputs={ITEM: key})
    out = run_operator(prepared, job, time=step, key=None, shards=shards, late=late,
                       shard=site, time_unit="us")
    return out.select(*columns)


#: By the DataFrame the mergeable batch path returned: its snapshots alone (a local relation)
#: and their rows, which merge_count_min sums without collecting them again.
_LOCAL_SNAPSHOTS: weakref.WeakKeyDictionary[
    DataFrame, tuple[DataFrame, list[tuple[Any, ...]]]] = weakref.WeakKeyDictionary()


def _snapshot_columns(df: DataFrame, time: str | Column | None, unit: str,
                      time_unit: str | None) -> list[str | Column]:
    """The snapshot stream's columns, its ``time`` (the operators' µs step) back in the
    input's kind: its time for ``unit="ticks"``, a position for ``unit="samples"``."""
    if unit == "ticks":
        restored = event_time(df, time, time_unit).restore(F.col("time"))
    else:  # integer arithmetic: a double loses positions beyond 2**53 / 1000
        p = POSITION_MICROS
        restored = F.expr(f"(time - pmod(time, {p})) div {p}")
    return [SHARD, "seq", "n_seen", restored.alias("time"), "sketch", REJECTED, DETAIL_OUT]


def latest_snapshots(snapshots: DataFrame) -> DataFrame:
    """The latest snapshot (highest ``seq``) of every shard; rejected rows are dropped.

    Examples
    --------
    >>> df = spark.createDataFrame([(i, i) for i in range(10)], "item long, t long")
    >>> snaps = windowed_count_min(df, "item", "t", window=5, shards=1, snapshot_every=3)
    >>> latest_snapshots(snaps).select("shard", "seq", "n_seen").collect()
    [Row(shard=0, seq=3, n_seen=10)]
    """
    if REJECTED in snapshots.columns:
        snapshots = snapshots.filter(F.col(REJECTED).isNull())
    newest = F.max_by(F.struct(*SNAPSHOT_COLUMNS), F.col("seq")).alias("s")
    return snapshots.groupBy(SHARD).agg(newest).select("s.*")


def merge_count_min(snapshots: DataFrame) -> DataFrame:
    """The DistCM coordinator: sum the latest count matrix of every shard into one sketch.

    A Spark aggregation (:func:`latest_snapshots`, then one group summing the matrices in
    pandas; matrices are small, ``depth x width`` cells per shard); snapshots that are already
    rows on the driver (the mergeable variants' batch path returns them so) are summed there,
    with no Spark job. Batch DataFrames only. On a
    stream, run it in ``foreachBatch`` over the union of the previous latest snapshots and the
    new ones, e.g.::

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
        (latest snapshot time), ``window_count`` (estimated items in the merged window: the mean
        row sum of the matrix), ``sketch`` (the merged :class:`CountMin` as bytes). No row if
        there is no snapshot.

    Examples
    --------
    >>> df = spark.createDataFrame([("a",), ("b",), ("a",), ("c",)], "item string")
    >>> snaps = windowed_count_min(df, "item", window=10, shards=2, algorithm="simple")
    >>> merge_count_min(snaps).select("shards", "n_seen", "window_count").collect()
    [Row(shards=2, n_seen=4, window_count=4.0)]
    """
    _require_batch(snapshots, "snapshots")
    on_driver = _merged_on_driver(snapshots)
    if on_driver is not None:
        return on_driver
    latest = latest_snapshots(snapshots)
    # One aggregation, so the snapshots are computed once; times stay in the JVM (pandas holds
    # nanoseconds and cannot hold a time in year 9999), only the sketches reach Python.
    totals = latest.agg(F.count(F.lit(1)).alias("shards"), F.sum("n_seen").alias("n_seen"),
                        F.max("time").alias("time"),
                        F.collect_list("sketch").alias("wk_sketches"))
    summed = _merge_udf()(F.col("wk_sketches")).alias("wk_merged")
    return (totals.filter(F.col("shards") > 0).select("*", summed)
            .select("shards", "n_seen", "time", "wk_merged.*"))


def _merged_on_driver(snapshots: DataFrame) -> DataFrame | None:
    """:func:`merge_count_min` without a Spark job when the snapshots are already rows on the
    driver (a local relation, as the batch path of the mergeable variants returns them):
    collecting them starts no job, and the few sketches are summed here. None otherwise.

    The result is again a local relation: the chosen snapshot row, filtered and projected,
    so its ``time`` keeps its own type and never passes through Python."""
    known = _LOCAL_SNAPSHOTS.get(snapshots)
    if known is not None:  # the mergeable path's own result: its rows are known here
        good, snapshot_rows = known
        # the µs step orders them as their times do
        rows = [{SHARD: shard, "seq": seq, "n_seen": n_seen, "wk_order": step, "sketch": sketch}
                for shard, seq, n_seen, step, sketch in snapshot_rows]
    else:
        good = snapshots
        if REJECTED in snapshots.columns:  # a rejected row is never a snapshot
            good = snapshots.filter(F.col(REJECTED).isNull())
        good = good.select(*SNAPSHOT_COLUMNS)
        if is_connect(good.sparkSession) or good._jdf.queryExecution().optimizedPlan(
                ).getClass().getSimpleName() != "LocalRelation":
            return None  # (a Connect client cannot see the plan: Spark merges)
        dtype = good.schema["time"].dataType
        order = F.unix_micros("time") if isinstance(dtype, T.TimestampType) else F.col("time")
        rows = [r.asDict() for r in good.select(SHARD, "seq", "n_seen", order.alias("wk_order"),
                                                "sketch").collect()]
    latest: dict[int, Any] = {}
    for row in rows:
        if row[SHARD] not in latest or row["seq"] > latest[row[SHARD]]["seq"]:
            latest[row[SHARD]] = row
    if not latest:  # no snapshot: the Spark merge gives its empty result
        return None
    chosen = [latest[shard] for shard in sorted(latest)]  # a fixed order of the float sums
    merged = _sum_sketches(pd.Series([r["sketch"] for r in chosen]))
    newest = max(chosen, key=lambda r: (r["wk_order"] is not None, r["wk_order"]))
    pick = (F.col(SHARD) == newest[SHARD]) & (F.col("seq") == newest["seq"])
    return good.filter(pick).limit(1).select(
        F.lit(len(chosen)).cast("bigint").alias("shards"),
        F.lit(sum(r["n_seen"] for r in chosen)).cast("bigint").alias("n_seen"), "time",
        F.lit(_window_count(merged)).alias("window_count"),
        F.lit(merged.to_bytes()).alias("sketch"))


@functools.lru_cache(maxsize=1)
def _merge_udf():
    schema = T.StructType([T.StructField("window_count", T.DoubleType()),
                           T.StructField("sketch", T.BinaryType())])

    # no type hints: PySpark would try to read a pandas UDF from them and warn on the console
    @F.udf(returnType=schema)
    def merge(blobs):
        merged = _sum_sketches(pd.Series(blobs))
        return _window_count(merged), merged.to_bytes()

    return merge


def _sum_sketches(blobs: pd.Series) -> CountMin:
    sketches = [CountMin.from_bytes(bytes(b)) for b in blobs]
    total = sketches[0]
    for other in sketches[1:]:
        total.merge(other)
    return total


def _window_count(cm: CountMin) -> float:
    return float(np.asarray(cm.counts, dtype=np.float64).sum(axis=1).mean())


def _require_batch(df: DataFrame, name: str) -> None:
    if df.isStreaming:
        msg = (f"`{name}` must be a batch DataFrame; on a stream call this function inside "
               "foreachBatch (see merge_count_min)")
        raise ValueError(msg)


def _sketch_bytes(sketch: bytes | CountMin | DataFrame) -> bytes:
    if isinstance(sketch, CountMin):
        return sketch.to_bytes()
    if isinstance(sketch, (bytes, bytearray, memoryview)):
        blob = bytes(sketch)
        CountMin.from_bytes(blob)  # a clear error now rather than in an executor
        return blob
    if isinstance(sketch, DataFrame):
        _require_batch(sketch, "sketch")
        rows = sketch.select("sketch").limit(2).collect()
        if len(rows) != 1:
            msg = f"`sketch` must hold exactly one sketch row; got {len(rows)}+ rows"
            raise ValueError(msg)
        return bytes(rows[0][0])
    msg = f"`sketch` must be bytes, a CountMin or a DataFrame; got {type(sketch).__name__}"
    raise ValueError(msg)


def estimate_frequency(
    sketch: bytes | CountMin | DataFrame,
    items: DataFrame,
    item: str,
    name: str = "estimate",
) -> DataFrame:
    """Add the estimated window frequency of each row's item, from a merged sketch.

    Estimates are rounded and never negative; null items get null. Perfect's are never below
    the true count of the sketch's window (an exact window, and Count-Min only overestimates);
    Simple, Proportional and Splitter approximate the window (Simple counts since its last
    reset) and can fall below it.

    Parameters
    ----------
    sketch : bytes, CountMin or DataFrame
        A sketch, its bytes, or a one-row DataFrame with a ``sketch`` column (the output of
        :func:`merge_count_min`, or one snapshot row).
    items : DataFrame
        Rows to annotate (batch or streaming).
    item : str
        The item column, of the same kind of values as the sketched column (integers are
        compared as integers, anything else as strings).
    name : str
        The new column's name.

    Returns
    -------
    DataFrame
        ``items`` plus a ``long`` column ``name``.

    Examples
    --------
    >>> df = spark.createDataFrame([(x,) for x in [5, 5, 7]], "item long")
    >>> merged = merge_count_min(windowed_count_min(df, "item", window=10, shards=2))
    >>> q = spark.createDataFrame([(5,), (7,), (8,), (None,)], "item int")
    >>> [tuple(r) for r in estimate_frequency(merged, q, "item").collect()]
    [(5, 2), (7, 1), (8, 0), (None, None)]
    """
    blob = _sketch_bytes(sketch)

    @F.pandas_udf("long")
    def _estimate(keys: pd.Series) -> pd.Series:
        cm = _decoded(blob)
        return pd.Series(cm.estimate(keys.to_numpy().astype(np.int64)), index=keys.index)

    key = item_key(item, column_type(items, item))
    return items.withColumn(name, F.when(F.col(item).isNotNull(), _estimate(key)))


@functools.lru_cache(maxsize=8)
def _decoded(blob: bytes) -> CountMin:
    return CountMin.from_bytes(blob)


def heavy_hitters(
    snapshots: DataFrame,
    candidates: DataFrame | list[Any],
    phi: float,
    item: str = "item",
    *,
    latest: bool = False,
) -> DataFrame:
    """Candidates whose estimated window frequency reaches ``phi`` times the window count,
    at every state of the coordinator.

    The snapshots are replayed in order of ``time`` (then ``shard``, ``seq``): after each one
    the coordinator's view is the sum of the latest matrix of every shard so far (DistCM), its
    window count ``W`` the view's mean row sum, and every candidate with
    ``estimate >= phi * W`` (and ``estimate > 0``) is reported. With ``latest=True`` only the
    final view (that of :func:`merge_count_min`) is evaluated, from the latest snapshot of each
    shard selected in the JVM (issue #16: sending every snapshot to one Python group overflowed
    Arrow's 2 GiB limit).

    Parameters
    ----------
    snapshots : DataFrame
        Output of :func:`windowed_count_min` (batch; see :func:`merge_count_min` for streams).
    candidates : DataFrame or list
        Items to test: a DataFrame with column ``item`` (e.g. the distinct items of the input;
        collected to the driver, so keep it to a few million) or a list of values.
    phi : float
        In (0, 1].
    item : str
        The candidates' column (and the output's item column name).
    latest : bool
        Only the final view.

    Returns
    -------
    DataFrame
        ``view`` (coordinator state number, from 0), ``time``, ``shard`` (whose snapshot
        produced the view), ``item``, ``estimate``, ``window_count``, ``threshold``.

    Examples
    --------
    >>> df = spark.createDataFrame([(x,) for x in "aaaaabbbc"], "item string")
    >>> snaps = windowed_count_min(df, "item", window=100, shards=1, algorithm="perfect")
    >>> heavy_hitters(snaps, ["a", "b", "c"], 0.3, latest=True).select("item", "estimate"
    ...               ).orderBy("item").collect()
    [Row(item='a', estimate=5), Row(item='b', estimate=3)]
    """
    check_in_range("phi", phi, 0, 1, low_open=True)
    _require_batch(snapshots, "snapshots")
    spark = snapshots.sparkSession
    if isinstance(candidates, DataFrame):
        cand = candidates.select(item).dropna().distinct()
    else:
        values = [v for v in candidates if v is not None]
        if not values:
            msg = "`candidates` must hold at least one non-null item"
            raise ValueError(msg)
        cand = spark.createDataFrame([(v,) for v in dict.fromkeys(values)], [item])
    cand = cand.withColumn(ITEM_KEY, item_key(item, cand.schema[item].dataType))
    keys = np.array([r[0] for r in cand.select(ITEM_KEY).collect()], dtype=np.int64)
    if latest:  # the newest snapshot of each shard, chosen in the JVM: a few rows reach Python
        good = latest_snapshots(snapshots)
    elif REJECTED in snapshots.columns:
        good = snapshots.filter(F.col(REJECTED).isNull())
    else:
        good = snapshots
    # the replay order is decided in the JVM; times never reach pandas (year 9999 would not fit)
    order = Window.orderBy(F.col("time").asc_nulls_first(), F.col(SHARD), F.col("seq"))
    good = good.select(*SNAPSHOT_COLUMNS).withColumn("wk_order", F.row_number().over(order))
    times = good.select("wk_order", "time")
    good = good.drop("time")
    schema = T.StructType([
        T.StructField("view", T.LongType()), T.StructField("wk_order", T.IntegerType()),
        T.StructField("shard", T.IntegerType()), T.StructField(ITEM_KEY, T.LongType()),
        T.StructField("estimate", T.LongType()), T.StructField("window_count", T.DoubleType()),
        T.StructField("threshold", T.DoubleType()),
    ])
    phi = float(phi)

    def replay(pdf: pd.DataFrame) -> pd.DataFrame:
        return _replay_views(pdf, keys, phi, latest)

    views = good.groupBy(F.lit(0).alias("wk_all")).applyInPandas(replay, schema)
    out = views.join(F.broadcast(cand), ITEM_KEY).join(times, "wk_order")
    return out.select("view", "time", "shard", item, "estimate", "window_count", "threshold")


def _replay_views(pdf: pd.DataFrame, keys: np.ndarray, phi: float, latest: bool) -> pd.DataFrame:
    """Walk the snapshots in order; after each, test the candidates on the coordinator's view."""
    pdf = pdf.sort_values("wk_order", kind="stable").reset_index(drop=True)
    if latest:  # one view: the newest snapshot of every shard, reported at the newest of them
        newest = pdf.groupby("shard")["seq"].transform("max") == pdf["seq"]
        pdf = pdf[newest].reset_index(drop=True)
    current: dict[int, np.ndarray] = {}
    cols: np.ndarray | None = None
    out = []
    for pos, r in enumerate(pdf.itertuples(index=False)):
        cm = CountMin.from_bytes(bytes(r.sketch))
        if cols is None:
            cols = cm.config.columns(keys)
        current[int(r.shard)] = np.asarray(cm.counts, dtype=np.float64)
        if latest and pos < len(pdf) - 1:
            continue
        total = np.sum(list(current.values()), axis=0)
        window_count = float(total.sum(axis=1).mean())
        threshold = phi * window_count
        est = estimate_counts(total, cols)
        hit = (est >= threshold) & (est > 0)
        out.append(pd.DataFrame({
            "view": 0 if latest else pos, "wk_order": int(r.wk_order), "shard": int(r.shard),
            ITEM_KEY: keys[hit], "estimate": est[hit], "window_count": window_count,
            "threshold": threshold,
        }))
    if not out:
        return pd.DataFrame({c: [] for c in _VIEW_COLUMNS})
    return pd.concat(out, ignore_index=True)[_VIEW_COLUMNS]


_VIEW_COLUMNS = ["view", "wk_order", "shard", ITEM_KEY, "estimate", "window_count",
                 "threshold"]
