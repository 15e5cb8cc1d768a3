"""Persistent items on batch and streaming DataFrames (issue 4).

An item's *persistence* in a window of ``window_slots`` timeslots is the number of distinct
slots of the window in which it appears; it is alpha-persistent when that number is at least
``alpha * window_slots`` (Lahiri, Tirthapura, Chandrashekar). Slots are aligned on the Unix
epoch: slot ``s`` is ``[s * slot, (s + 1) * slot)``, like Spark's ``window()``.

* :func:`persistent_items` runs the sketch (:class:`~windowkit.core.persistence.operator.
  PersistentItemsOperator`) through the generic adapter. Rows are partitioned by a hash of the
  item computed in the JVM, so every shard sees all the rows of its items and runs one operator;
  the shards' reports are disjoint, so their union is the answer (no merge step).
* :func:`exact_persistent_items` is the exact baseline in plain Spark SQL.
* :func:`windowkit.spark.split_rejected` separates reported items from rejected rows.
"""

from __future__ import annotations

import datetime as dt
import functools
import math

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.durations import origin_micros, to_micros
from windowkit.core.persistence.operator import (
    ITEM,
    ExactPersistentItemsOperator,
    PersistentItemsOperator,
)
from windowkit.core.sketch_defaults import DEFAULT_PERSISTENCE_DELTA
from windowkit.core.validation import check_in_range, check_int
from windowkit.spark.adapter import (
    DETAIL_OUT,
    REJECTED,
    OperatorJob,
    as_column,
    row_json,
    run_operator,
)
from windowkit.spark.columns import ColumnLike, resolve_column
from windowkit.spark.event_time import EventTime, TimeUnit, event_time, floor_div
from windowkit.spark.rejected import deprecated_splitter

REPORTED = "persistent"
"""``status`` of an output row that reports an item (null on a rejected row)."""

_SLOT = "wk_slot"


def persistent_items(
    df: DataFrame,
    item: ColumnLike,
    time: ColumnLike,
    slot: str | int | dt.timedelta = "30 seconds",
    window_slots: int = 100,
    alpha: float = 0.5,
    epsilon: float = 0.1,
    delta: float | None = DEFAULT_PERSISTENCE_DELTA,
    sliding: bool = True,
    shards: int | None = None,
    late: str | None = "1 minute",
    seed: int = 0,
    time_unit: TimeUnit | None = None,
    origin: str | dt.datetime | None = None,
) -> DataFrame:
    """Items present in at least ``alpha * window_slots`` of the last ``window_slots`` slots.

    Works on batch and streaming DataFrames alike. The guarantees are the sketch's: an item
    whose persistence is below ``(alpha - epsilon) * window_slots`` is never reported; an
    alpha-persistent item is missed with probability at most ``delta`` (0.01 by default);
    the state per shard is about ``2 / (epsilon * window_slots)`` times the distinct
    (item, slot) pairs of the window.

    * Batch: each shard runs the operator over all its rows, then ends the input. Sliding
      windows end at every slot from the first slot of a shard to the last slot of the whole
      input (found by one aggregation over ``df`` when the function is called).
    * Streaming: rows go to the shards as they come; a slot closes when the watermark
      (``late`` behind the latest event time) passes its end, and its window's rows are then
      emitted once (append mode). Rows behind the watermark are reported as ``late``.

    Parameters
    ----------
    df : DataFrame
        The input, batch or streaming.
    item : str or Column
        The item: a column name or any expression of ``df``'s columns (e.g.
        ``F.lower("host")``). Integer items travel as int64; other types as strings (the
        output casts them back to the item's type).
    time : str or Column
        Event time, a column name or an expression: a timestamp, ``timestamp_ntz``, date or
        timestamp string, or an integer with ``time_unit``.
    slot : str, int or datetime.timedelta
        Slot length: ``"30 seconds"``, a ``timedelta`` or microseconds.
    window_slots : int
        Window length ``n`` in slots (>= 1).
    alpha : float
        Persistence threshold in (0, 1].
    epsilon : float
        Uncertainty in (0, alpha).
    delta : float, optional
        False-negative probability in (0, 1): runs ``ceil(ln(1/delta) / 2)`` instances of the
        sketch, 3 for the default 0.01 (None: one instance, which misses an alpha-persistent
        item with probability at most ``e**-2``, about 0.135).
    sliding : bool
        Sliding windows ending at every slot (default), or tumbling windows of
        ``window_slots`` slots (``window_end_slot = k * window_slots + window_slots - 1``).
    shards : int, optional
        Spark groups the items are hashed into (default one per core on a batch,
        ``spark.sql.shuffle.partitions`` on a stream). Keep
        it fixed for the life of a streaming checkpoint.
    late : str, optional
        Streaming only: watermark delay such as ``"1 minute"``.
    seed : int
        Hash seed of the sketch.
    time_unit : {"s", "ms", "us", "ns"}, optional
        The unit of an integer ``time`` column (required for one).
    origin : str or datetime, optional
        Where slot 0 starts (``"2024-01-01 00:00:00"``, read as UTC, or a datetime). Default:
        1970-01-01 00:00 UTC, like Spark's ``window()``; "1 week" slots then start on
        Thursdays, the weekday of 1970-01-01.

    Returns
    -------
    DataFrame
        ``window_end_slot`` (long), ``window_start``, ``window_end`` (the window's half-open
        bounds: timestamps, or microseconds when ``time`` is an integer column), the item
        column (named as Spark names ``item`` in a ``select``: ``ip``, ``lower(host)``, with
        its type), ``estimate`` (double: sampled persistence ``+ epsilon * window_slots / 2``,
        the expected slots missed before the item was sampled, so an item seen in nearly every
        slot can get more than ``window_slots``), ``status`` (``persistent``), ``rejected``
        (null; ``malformed`` for a null item or time, ``late`` for a streaming row behind the
        watermark, with null item columns) and ``detail`` (the rejected row as JSON). Use
        :func:`windowkit.spark.split_rejected` to separate the two kinds.

    Raises
    ------
    ValueError
        For ``alpha``, ``epsilon``, ``delta``, ``window_slots``, ``slot``, ``shards`` or
        ``seed`` out of range (the message names the parameter).

    Examples
    --------
    Item ``a`` is seen in slots 0, 1, 2 and ``b`` in slots 1, 3 (10-second slots); windows of
    4 slots, ``alpha = 1`` and ``epsilon = 0.5``: an item is reported when it is in at least
    ``(alpha - epsilon) * 4 = 2`` slots of the window (``epsilon * n = 2`` makes the sketch
    exact; the estimate adds ``epsilon * n / 2 = 1``):

    >>> seen = [("a", 1), ("a", 12), ("a", 14), ("b", 15), ("a", 21), ("b", 37)]
    >>> df = spark.createDataFrame(seen, "ip string, s long").withColumn(
    ...     "t", F.timestamp_seconds("s"))
    >>> out = persistent_items(df, "ip", "t", slot="10 seconds", window_slots=4, alpha=1.0,
    ...                        epsilon=0.5)
    >>> out.select("window_end_slot", "ip", "estimate", "status").orderBy(
    ...     "window_end_slot", "ip").show()
    +---------------+---+--------+----------+
    |window_end_slot| ip|estimate|    status|
    +---------------+---+--------+----------+
    |              1|  a|     3.0|persistent|
    |              2|  a|     4.0|persistent|
    |              3|  a|     4.0|persistent|
    |              3|  b|     3.0|persistent|
    +---------------+---+--------+----------+
    <BLANKLINE>
    """
    # resolved on the caller's columns, before the adapter adds its own
    resolved = resolve_column(df, item, "item")
    integral = isinstance(resolved.type, T.IntegralType)
    # validates the parameters, before any Spark work
    factory = persistent_operator(**locals(), item_type="int64" if integral else "string")
    item_type = resolved.type
    slot_us, origin_us = factory.args[3], factory.keywords["origin"]
    if shards is None:
        from windowkit.spark.adapter import default_shards

        shards = default_shards(df)
    shards = check_int("shards", shards, 1)
    item_value = resolved.column.cast("long" if integral else "string")
    clock = event_time(df, time, time_unit)
    micros = clock.micros()
    job = OperatorJob(factory=factory, inputs={ITEM: item_value})
    # The operator routes by the item: every row of an item reaches the same shard (a row
    # without an item is malformed), and no key travels to Python (the operator needs none).
    def project(columns: dict[str, Column | str]) -> list[Column | str]:
        reason = as_column(columns[REJECTED])
        status = F.when(reason.isNull(), F.lit(REPORTED)).alias("status")
        return ["window_end_slot",
                *_bounds(F.col("window_end_slot"), slot_us, window_slots, origin_us, clock),
                F.col(ITEM).cast(item_type).alias(resolved.name), "estimate", status,
                reason.alias(REJECTED), DETAIL_OUT]

    return run_operator(df, job, time=micros, key=None, shards=shards, late=late,
                        time_unit="us", project=project)


def persistent_operator(*, slot: str | int | dt.timedelta = "30 seconds",
                        window_slots: int = 100, alpha: float = 0.5, epsilon: float = 0.1,
                        delta: float | None = DEFAULT_PERSISTENCE_DELTA, sliding: bool = True,
                        seed: int = 0, origin: str | dt.datetime | None = None,
                        item_type: str | None = None, item: object = None,
                        table: T.StructType | None = None, **_: object) -> functools.partial:
    """The operator factory :func:`persistent_items` runs, from its parameters (keywords; the
    others are ignored), checked as the function checks them: also its SQL table function's,
    where ``item_type`` follows the type of the ``table``'s ``item`` column.

    Examples
    --------
    >>> factory = persistent_operator(slot="10 seconds", window_slots=4, item="ip",
    ...                               table=T.StructType.fromDDL("ip int, t timestamp"))
    >>> factory().item_type, factory().output_schema[0]
    ('int64', ('window_end_slot', 'int64'))
    >>> persistent_operator(alpha=0.5, epsilon=0.5)
    Traceback (most recent call last):
    ...
    ValueError: `epsilon` must be smaller than `alpha`; got epsilon=0.5, alpha=0.5
    """
    slot_us, mode = _check(slot, window_slots, alpha, epsilon, sliding)
    origin_us = origin_micros(origin)
    if delta is not None:
        check_in_range("delta", delta, 0, 1, low_open=True, high_open=True)
    if item_type is None:
        item_type = _item_type(item, table)
    op_kwargs = {"mode": mode, "item_type": item_type, "delta": delta, "seed": seed,
                 "origin": origin_us}
    PersistentItemsOperator(alpha, epsilon, window_slots, slot_us, **op_kwargs)  # checks them
    return functools.partial(PersistentItemsOperator, alpha, epsilon, window_slots, slot_us,
                             **op_kwargs)


def exact_persistent_operator(*, slot: str | int | dt.timedelta = "30 seconds",
                              window_slots: int = 100, alpha: float = 0.5, sliding: bool = True,
                              origin: str | dt.datetime | None = None, item: object = None,
                              table: T.StructType | None = None, **_: object
                              ) -> functools.partial:
    """The operator factory of :func:`exact_persistent_items`' SQL table function, from the
    function's parameters (keywords; the others are ignored), checked as the function checks
    them: the exact count of the same slots and windows (see
    :class:`~windowkit.core.persistence.operator.ExactPersistentItemsOperator`), where the
    DataFrame function counts them in plain Spark SQL.

    Examples
    --------
    >>> factory = exact_persistent_operator(slot="10 seconds", window_slots=4, item="ip",
    ...                                     table=T.StructType.fromDDL("ip int, t timestamp"))
    >>> factory().output_schema
    [('window_end_slot', 'int64'), ('item', 'int64'), ('persistence', 'int64')]
    >>> exact_persistent_operator(window_slots=0)
    Traceback (most recent call last):
    ...
    ValueError: `window_slots` must be an integer in [1, inf); got 0
    """
    slot_us, mode = _check(slot, window_slots, alpha, None, sliding)
    op_kwargs = {"mode": mode, "item_type": _item_type(item, table),
                 "origin": origin_micros(origin)}
    return functools.partial(ExactPersistentItemsOperator, alpha, window_slots, slot_us,
                             **op_kwargs)


def _item_type(item: object, table: T.StructType | None) -> str:
    """The operator's item type: ``int64`` for a column of integers, else ``string``."""
    return "int64" if isinstance(_item_field(item, table), T.IntegralType) else "string"


def _item_field(item: object, table: T.StructType | None) -> T.DataType | None:
    """The type of the ``table``'s column ``item`` names (None: not a column of it)."""
    if table is None or not isinstance(item, str) or item not in table.names:
        return None
    return table[item].dataType


def persistent_columns(operator: PersistentItemsOperator, *, item: object,
                       table: T.StructType, **_: object) -> list:
    """:func:`persistent_items`' columns as its projection makes them (the window's bounds
    from its last slot, the item under its column's name and type, the operator's estimate
    or count, the status), for its SQL table function and :func:`exact_persistent_items`';
    the SQL ``item`` names a column of the ``table``.

    Examples
    --------
    >>> table = T.StructType.fromDDL("ip string, t timestamp")
    >>> op = persistent_operator(slot="10 seconds", window_slots=4, item="ip", table=table)()
    >>> [entry if isinstance(entry, str) else entry[0]
    ...  for entry in persistent_columns(op, item="ip", table=table)][:6]
    ['window_end_slot', 'window_start', 'window_end', 'ip', 'estimate', 'status']
    """
    item_type = _item_field(item, table)
    if item_type is None:
        msg = f"`item` must name a column of the table ({', '.join(table.names)}); got {item!r}"
        raise ValueError(msg)
    slot, window = operator.slot_length, operator.config.n

    def start(part):
        return (part["window_end_slot"] - (window - 1)) * slot + operator.origin

    def end(part):
        return (part["window_end_slot"] + 1) * slot + operator.origin

    return ["window_end_slot", ("window_start", start, "timestamp"),
            ("window_end", end, "timestamp"), (item, ITEM, item_type),
            operator.output_schema[2][0],
            ("status", lambda part: [REPORTED] * len(part), T.StringType()), REJECTED,
            DETAIL_OUT]


def exact_persistent_items(
    df: DataFrame,
    item: ColumnLike,
    time: ColumnLike,
    slot: str | int | dt.timedelta = "30 seconds",
    window_slots: int = 100,
    alpha: float = 0.5,
    sliding: bool = True,
    time_unit: TimeUnit | None = None,
    origin: str | dt.datetime | None = None,
) -> DataFrame:
    """The exact alpha-persistent items of every window, in plain Spark SQL (batch only).

    The baseline :func:`persistent_items` is measured against. Distinct (item, slot) pairs
    first; fixed windows then count slots per (item, window). Sliding windows use one
    ``+1`` event at each slot of an item and one ``-1`` event ``window_slots`` later: a
    running sum per item (a window function ordered by slot) gives the item's persistence on
    each run of window ends between two events, and only the runs at or above the threshold
    are expanded into window ends. The work is linear in the distinct pairs plus the output,
    instead of ``window_slots`` times the pairs for a naive explode.

    Window ends run from each item's first slot to the input's last slot (sliding), or are
    the tumbling windows' last slots (fixed), as for :func:`persistent_items`.

    Parameters
    ----------
    df : DataFrame
        A batch DataFrame.
    item, time, slot, window_slots, sliding, time_unit, origin
        As for :func:`persistent_items`.
    alpha : float
        Persistence threshold in (0, 1]: an item is reported when it is in at least
        ``ceil(alpha * window_slots)`` slots of the window.

    Returns
    -------
    DataFrame
        ``window_end_slot``, ``window_start``, ``window_end``, the item column (named as
        for :func:`persistent_items`), ``persistence`` (long), ``status`` (``persistent``),
        ``rejected`` (null, or ``malformed`` for a row with a null item or a null or
        unparsable time, never dropped silently, with null item columns) and ``detail`` (the
        rejected row as JSON).

    Examples
    --------
    >>> seen = [("a", 1), ("a", 12), ("a", 14), ("b", 15), ("a", 21), ("b", 37)]
    >>> df = spark.createDataFrame(seen, "ip string, s long").withColumn(
    ...     "t", F.timestamp_seconds("s"))
    >>> out = exact_persistent_items(df, "ip", "t", slot="10 seconds", window_slots=4,
    ...                              alpha=0.5)
    >>> [tuple(r) for r in out.select("window_end_slot", "ip", "persistence").orderBy(
    ...     "window_end_slot", "ip").collect()]
    [(1, 'a', 2), (2, 'a', 3), (3, 'a', 3), (3, 'b', 2)]

    An item may be an expression; its column is named as Spark names it:

    >>> exact_persistent_items(df, F.upper("ip"), "t", slot="10 seconds", window_slots=4,
    ...                        alpha=0.5).columns[3]
    'upper(ip)'
    """
    slot_us, _ = _check(slot, window_slots, alpha, None, sliding)
    if df.isStreaming:
        msg = "`df` must be a batch DataFrame: exact_persistent_items is a batch baseline"
        raise ValueError(msg)
    need = max(1, math.ceil(round(alpha * window_slots, 9)))
    origin_us = origin_micros(origin)
    resolved = resolve_column(df, item, "item")
    clock = event_time(df, time, time_unit)
    micros = clock.micros()
    usable = resolved.column.isNotNull() & micros.isNotNull()
    pairs = (df.where(usable)
             .select(resolved.column.alias(ITEM),
                     _slot_index(micros, slot_us, origin_us).alias(_SLOT))
             .distinct())
    n = F.lit(window_slots)
    if not sliding:
        window_index = _slot_index(F.col(_SLOT), window_slots)  # floor(slot / n)
        counts = pairs.groupBy(ITEM, window_index.alias("wk_w")).agg(F.count("*").alias("p"))
        out = counts.where(F.col("p") >= need).select(
            (F.col("wk_w") * n + n - 1).alias("window_end_slot"), ITEM, F.col("p"))
    else:
        last = pairs.agg(F.max(_SLOT).alias("wk_last"))
        events = pairs.select(ITEM, F.col(_SLOT).alias("c"), F.lit(1).alias("d")).unionByName(
            pairs.select(ITEM, (F.col(_SLOT) + n).alias("c"), F.lit(-1).alias("d")))
        by_item = Window.partitionBy(ITEM).orderBy("c")
        steps = (events.groupBy(ITEM, "c").agg(F.sum("d").alias("d"))
                 .select(ITEM, "c",
                         F.sum("d").over(by_item.rowsBetween(Window.unboundedPreceding,
                                                             Window.currentRow)).alias("p"),
                         F.lead("c").over(by_item).alias("next_c"))
                 .where(F.col("p") >= need)
                 .crossJoin(F.broadcast(last)))
        upto = F.least(F.col("next_c") - 1, F.col("wk_last"))
        out = steps.where(F.col("c") <= upto).select(
            F.explode(F.sequence(F.col("c"), upto)).alias("window_end_slot"), ITEM, F.col("p"))
    bounds = _bounds(F.col("window_end_slot"), slot_us, window_slots, origin_us, clock)
    reported = out.select(
        "window_end_slot", *bounds, F.col(ITEM).alias(resolved.name),
        F.col("p").cast("long").alias("persistence"), F.lit(REPORTED).alias("status"),
        F.lit(None).cast("string").alias(REJECTED), F.lit(None).cast("string").alias(DETAIL_OUT))
    original = row_json(df, own_only=False)
    rejected = df.where(~F.coalesce(usable, F.lit(False))).select(
        *[F.lit(None).cast(f.dataType).alias(f.name) for f in reported.schema.fields[:6]],
        F.lit("malformed").alias(REJECTED), original.alias(DETAIL_OUT))
    return reported.unionByName(rejected)


#: Deprecated: :func:`windowkit.spark.split_rejected` splits every function's output.
split_persistent = deprecated_splitter("split_persistent")


# -- helpers -----------------------------------------------------------------------------------
def _check(
    slot: str | int | dt.timedelta, window_slots: int, alpha: float, epsilon: float | None,
    sliding: bool,
) -> tuple[int, str]:
    slot_us = to_micros(slot, "slot")
    check_int("window_slots", window_slots, 1)
    check_in_range("alpha", alpha, 0, 1, low_open=True)
    if epsilon is not None:
        check_in_range("epsilon", epsilon, 0, 1, low_open=True)
        if epsilon >= alpha:
            msg = ("`epsilon` must be smaller than `alpha`; "
                   f"got epsilon={epsilon!r}, alpha={alpha!r}")
            raise ValueError(msg)
    if not isinstance(sliding, bool):
        msg = f"`sliding` must be True or False; got {sliding!r}"
        raise ValueError(msg)
    return slot_us, "sliding" if sliding else "fixed"


def _slot_index(micros: Column, slot_us: int, origin_us: int = 0) -> Column:
    """``floor((micros - origin) / slot_us)`` in exact integer arithmetic (negative too)."""
    shifted = micros - F.lit(origin_us) if origin_us else micros
    return floor_div(shifted, slot_us)


def _bounds(end_slot: Column, slot_us: int, window_slots: int, origin_us: int,
            clock: EventTime) -> list[Column]:
    start = (end_slot - F.lit(window_slots - 1)) * F.lit(slot_us) + F.lit(origin_us)
    end = (end_slot + F.lit(1)) * F.lit(slot_us) + F.lit(origin_us)
    return [clock.restore(start).alias("window_start"), clock.restore(end).alias("window_end")]


__all__ = ["REPORTED", "exact_persistent_items", "persistent_items", "split_persistent"]
