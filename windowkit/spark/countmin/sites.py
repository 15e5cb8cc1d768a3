"""DistCM sites of the rows and the item keys: where each row is sketched, and at which step.

Items are hashed in the JVM with ``xxhash64`` (integral columns as ``long``, every other type as
its string form), so only int64 keys reach the sketches. Each row's *step* is the int64 µs
clock time its sketch update happens at: the event time for ``unit="ticks"``, and for
``unit="samples"`` :data:`POSITION_MICROS` times its position in the whole stream, so every
site's sketch is time-based over the same global steps.
"""

from __future__ import annotations

from typing import Literal

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.validation import check_int
from windowkit.spark.columns import row_hash_sql
from windowkit.spark.event_time import TimeUnit, column_type, event_time
from windowkit.spark.keys import KeyLike, resolve_key

DEFAULT_SHARDS = 4
"""Sites when ``shards`` is not given: a constant, so results never depend on the machine."""

SHARD = "shard"
ITEM_KEY = "item_key"
POSITION = "position"
# internal columns (the adapter leaves "wk_" columns out of a rejected row's JSON)
_POS = "wk_cm_position"
_MID = "wk_cm_row"
_MICROS = "wk_cm_micros"
#: For unit="samples" one position is one millisecond of the operators' clock (µs): Spark's
#: watermark moves in milliseconds, so a stream's watermark can then pass every position.
POSITION_MICROS = 1000
#: The time unit whose µs are :data:`POSITION_MICROS` (a sequence number read as a time).
POSITION_UNIT = "ms"


# ------------------------------------------------------------------ hashing
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
    cast = _item_cast(dtype)
    return F.xxhash64(column if cast is None else column.cast(cast))


def item_key_sql(column: str, dtype: T.DataType) -> str:
    """:func:`item_key` as SQL text over ``column`` (SQL text of an item column of type
    ``dtype``), for a plan Python builds no Column of (a SQL table function's).

    Examples
    --------
    >>> item_key_sql("`i`", T.IntegerType()), item_key_sql("`s`", T.StringType())
    ('xxhash64(CAST(`i` AS BIGINT))', 'xxhash64(`s`)')
    """
    cast = _item_cast(dtype)
    return f"xxhash64({column if cast is None else f'CAST({column} AS {cast.upper()})'})"


def _item_cast(dtype: T.DataType | None) -> str | None:
    """The type an item of ``dtype`` is hashed as (None: as it is): integers as ``bigint``,
    text and bytes as they are, anything else as its text."""
    if isinstance(dtype, T.IntegralType | T.BooleanType):
        return "bigint"
    if isinstance(dtype, T.BinaryType | T.StringType):
        return None
    return "string"


def _is_sequence(df: DataFrame, time: str | Column | None, time_unit: str | None) -> bool:
    """Whether ``time`` is an integer sequence number (no ``time_unit``): its own position."""
    return (time is not None and time_unit is None
            and isinstance(column_type(df, time), T.IntegralType))


# ------------------------------------------------------------------ sites and steps
def count_min_sites(
    df: DataFrame,
    item: str | Column,
    time: str | Column | None = None,
    by: KeyLike = None,
    shards: int | None = None,
    *,
    unit: Literal["samples", "ticks"] = "samples",
    time_unit: TimeUnit | None = None,
) -> DataFrame:
    """``df`` with the columns :func:`windowed_count_min` derives: ``shard``, ``item_key`` and
    ``position``.

    * ``shard``: the DistCM site of the row, in ``[0, shards)``: ``pmod(xxhash64(by), shards)``
      if ``by`` is given (a column name, a Column, or a list of them: the hash of the text
      :mod:`windowkit.spark.keys` writes the composite key as); else, for
      ``unit="samples"``, its position in the stream modulo ``shards`` (round robin, as a
      load balancer would spread the stream; a rejected row with no position goes to site 0;
      sequence numbers that all share a factor with ``shards`` use only some sites, which
      costs Splitter and streams parallelism, never accuracy), and
      for ``unit="ticks"`` ``pmod(xxhash64(position), shards)`` (rows at the same instant
      share a site). Deterministic: the same rows give the same sites whatever the
      partitioning.
    * ``item_key``: :func:`item_key` of ``item``.
    * ``position``: the step the row's sketch update happens at, as int64 microseconds the
      core operator reads as its time. ``unit="ticks"``: the event time in µs. ``unit="samples"``:
      :data:`POSITION_MICROS` times the row's position in the whole stream: ``time`` itself if
      it is an integer column given without ``time_unit`` (a sequence number); the rank of
      ``time`` among the rows that are counted (a row with a time and an item) if it is a
      timestamp or an integer with ``time_unit`` (batch only; rows at the same time in the
      order of a hash of their contents, :func:`~windowkit.spark.columns.row_hash_sql`, so
      the input's order and partitioning never change a result); without ``time`` (batch
      only), the row's place in the input (partition order, then row order within it).

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
    df: DataFrame, item: str | Column, time: str | Column | None, by: KeyLike,
    shards: int, unit: str, time_unit: str | None,
) -> tuple[DataFrame, Column, Column]:
    """``(df with the µs step column _POS, item_key, shard)``; see :func:`count_min_sites`."""
    # every column resolved on the caller's columns, before a column of windowkit's own is
    # added: Spark's "did you mean" for a typo then lists the caller's columns only
    key = item_key(item, column_type(df, item))
    site_key = None if by is None else resolve_key(df, by)
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
        # The rank of the counted rows in time order, ties in the order of a hash of their
        # contents: one sort of all rows in one partition.
        counted = F.when((F.col(item) if isinstance(item, str) else item).isNotNull(), micros)
        order = Window.orderBy(F.col(_MICROS).asc_nulls_last(), F.col(_MID))
        df = (df.withColumns({_MID: F.expr(row_hash_sql(df.schema)), _MICROS: counted})
              .withColumn(_POS, F.when(F.col(_MICROS).isNotNull(),
                                       F.row_number().over(order) - 1))
              .drop(_MICROS))
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
        # one key column hashes as an item of its type; a composite one as its text
        shipped = site_key.types[0] if len(site_key.names) == 1 else T.StringType()
        site = F.pmod(item_key(site_key.value, shipped), F.lit(shards))
    return df, key, site.cast("int")



def _input_positions(df: DataFrame) -> DataFrame:
    """``df`` with ``_POS``: each row's place in the input, partition by partition.

    Lazy: each partition's offset is the sum of the row counts of the partitions before it,
    an aggregation joined back (broadcast) by partition id in the same plan. Both branches
    read the input with the same partitioning, so they see the same partitions.
    """
    pid = F.spark_partition_id()
    # monotonically_increasing_id is (partition << 33) + row number within the partition
    tagged = df.withColumns({"wk_cm_part": pid,
                             "wk_cm_within": F.monotonically_increasing_id()
                             - F.shiftleft(pid.cast("long"), 33)})
    counts = tagged.groupBy("wk_cm_part").agg(F.count(F.lit(1)).alias("wk_cm_rows"))
    before = Window.orderBy("wk_cm_part").rowsBetween(Window.unboundedPreceding, -1)
    offsets = counts.select("wk_cm_part", F.coalesce(F.sum("wk_cm_rows").over(before),
                                                     F.lit(0)).alias("wk_cm_offset"))
    positioned = tagged.join(F.broadcast(offsets), "wk_cm_part")
    position = (F.col("wk_cm_offset") + F.col("wk_cm_within")).cast("long")
    return positioned.select(*[F.col(f"`{c}`") for c in df.columns], position.alias(_POS))
