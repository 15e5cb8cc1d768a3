"""Queries of merged sketches: the estimated frequency of items, and the heavy hitters of every
state of the DistCM coordinator.

Both are lazy. :func:`estimate_frequency` with a sketch given as a DataFrame estimates in the
JVM: the sketch's matrix is decoded once (a one-row Python step) and broadcast, and every item's
columns are Spark's Count-Min hash of its key, computed in exact long arithmetic (every sketch of
windowkit's Spark functions hashes with Spark's family). :func:`heavy_hitters` replays the
snapshots in ranges of consecutive coordinator states, one Spark group per range, each starting
from the latest snapshot of every shard before its range (chosen in the JVM).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.hashing import spark_xxhash64
from windowkit.core.sketches import CountMin
from windowkit.core.sketches._hashing import spark_multipliers
from windowkit.core.sketches.coordinator import (
    CANDIDATE,
    HeavyHittersOperator,
    heavy_hitters_of_view,
)
from windowkit.core.validation import check_in_range
from windowkit.spark.adapter import REJECTED
from windowkit.spark.columns import ColumnLike, quoted, quoted_name, resolve_column
from windowkit.spark.countmin.merge import require_batch
from windowkit.spark.countmin.sites import ITEM_KEY, SHARD, item_key
from windowkit.spark.countmin.snapshots import SNAPSHOT_COLUMNS, latest_snapshots
from windowkit.spark.event_time import EventTime, time_kind

#: Coordinator states replayed by one Spark group of :func:`heavy_hitters` (at least; twice the
#: shards when there are more, so that a range's starting matrices never outnumber its own).
RANGE_VIEWS = 64
_LOW31 = 0x7FFFFFFF
_LOW32 = 0xFFFFFFFF


def _sketch_bytes(sketch: bytes | CountMin) -> bytes:
    if isinstance(sketch, CountMin):
        return sketch.to_bytes()
    if isinstance(sketch, (bytes, bytearray, memoryview)):
        blob = bytes(sketch)
        CountMin.from_bytes(blob)  # a clear error now rather than in an executor
        return blob
    msg = f"`sketch` must be bytes, a CountMin or a DataFrame; got {type(sketch).__name__}"
    raise ValueError(msg)


def estimate_frequency(
    sketch: bytes | CountMin | DataFrame,
    items: DataFrame,
    item: ColumnLike,
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
        :func:`merge_count_min`, or one snapshot row; its sketch must hash with Spark's
        family, as every sketch of :func:`windowed_count_min` does). A DataFrame with no row
        or several fails the query that reads the result.
    items : DataFrame
        Rows to annotate (batch or streaming).
    item : str or Column
        The item: a column name of ``items`` or an expression of its columns (e.g.
        ``F.lower("host")``), of the same kind of values as the sketched items (integers are
        compared as integers, anything else as strings).
    name : str
        The new column's name.

    Returns
    -------
    DataFrame
        ``items`` (its own columns: an expression ``item`` adds none) plus a ``long`` column
        ``name``.

    Examples
    --------
    >>> from windowkit.spark.countmin import merge_count_min, windowed_count_min
    >>> df = spark.createDataFrame([(x,) for x in [5, 5, 7]], "item long")
    >>> merged = merge_count_min(windowed_count_min(df, "item", window=10, shards=2))
    >>> q = spark.createDataFrame([(5,), (7,), (8,), (None,)], "item int")
    >>> [tuple(r) for r in estimate_frequency(merged, q, "item").collect()]
    [(5, 2), (7, 1), (8, 0), (None, None)]
    """
    resolved = resolve_column(items, item, "item")
    key = item_key(resolved.column, resolved.type)
    present = resolved.column.isNotNull()
    if isinstance(sketch, DataFrame):
        require_batch(sketch, "sketch")
        matrix = F.broadcast(_decoded_matrix(sketch))
        joined = items.crossJoin(matrix)
        estimate = _jvm_estimate(key)
        return joined.select(*[quoted(c) for c in items.columns],
                             F.when(present, estimate).alias(name))
    blob = _sketch_bytes(sketch)

    @F.pandas_udf("long")
    def _estimate(keys: pd.Series) -> pd.Series:
        cm = _decoded(blob)
        return pd.Series(cm.estimate(keys.to_numpy().astype(np.int64)), index=keys.index)

    return items.withColumn(name, F.when(present, _estimate(key)))


@functools.lru_cache(maxsize=8)
def _decoded(blob: bytes) -> CountMin:
    return CountMin.from_bytes(blob)


_MATRIX = T.StructType([T.StructField("wk_counts", T.ArrayType(T.DoubleType())),
                        T.StructField("wk_width", T.LongType()),
                        T.StructField("wk_multipliers", T.ArrayType(T.LongType()))])


def estimate_keys(sketch: bytes | CountMin, rows: DataFrame, key: str,
                  name: str = "estimate") -> DataFrame:
    """``rows`` plus a ``long`` column ``name``: the estimate of each row's sketch key (the
    ``long`` column ``key``, :func:`~windowkit.spark.countmin.sites.item_key` of an item), from
    a sketch held by the driver, computed in the JVM.

    The sketch's matrix reaches the executors as a one-row local DataFrame, broadcast: no
    Python worker runs (:func:`estimate_frequency` given bytes estimates in a pandas UDF). The
    sketch must hash with Spark's family, as every sketch of :func:`windowed_count_min` does.

    Examples
    --------
    >>> cm = CountMin(3, 16, seed=1, hashing="spark")
    >>> rows = spark.createDataFrame([(5,), (6,), (5,)], "item long").select(
    ...     "item", item_key("item").alias("k"))
    >>> cm.update([r["k"] for r in rows.collect()])
    >>> [tuple(r) for r in estimate_keys(cm, rows.distinct(), "k").select(
    ...     "item", "estimate").orderBy("item").collect()]
    [(5, 2), (6, 1)]
    """
    matrix = rows.sparkSession.createDataFrame([sketch_matrix(_sketch_bytes(sketch))], _MATRIX)
    joined = rows.crossJoin(F.broadcast(matrix))
    return joined.select(*[F.col(f"`{c}`") for c in rows.columns],
                         _jvm_estimate(F.col(key)).alias(name))


def _decoded_matrix(sketch: DataFrame) -> DataFrame:
    """One row: the sketch's cells (row after row), its width and Spark's row multipliers;
    the query fails unless ``sketch`` holds exactly one row."""
    one = sketch.agg(F.count(F.lit(1)).alias("wk_n"), F.first("sketch").alias("wk_sketch"))
    checked = F.when(F.col("wk_n") == 1, F.col("wk_sketch")).otherwise(F.raise_error(
        F.concat(F.lit("`sketch` must hold exactly one sketch row; got "),
                 F.col("wk_n").cast("string"), F.lit(" rows"))))
    return one.select(_matrix_udf()(checked).alias("wk_m")).select("wk_m.*")


@functools.lru_cache(maxsize=1)
def _matrix_udf():
    # no type hints: PySpark would try to read a pandas UDF from them and warn on the console
    @F.udf(returnType=_MATRIX)
    def matrix(blob):
        return sketch_matrix(bytes(blob))

    return matrix


def sketch_matrix(blob: bytes) -> tuple[list[float], int, list[int]]:
    """``(cells row after row, width, row multipliers)`` of a serialized :class:`CountMin`
    that hashes with Spark's family: what :func:`estimate_frequency` estimates with in the JVM.

    Examples
    --------
    >>> cm = CountMin(2, 3, seed=1, hashing="spark")
    >>> cells, width, multipliers = sketch_matrix(cm.to_bytes())
    >>> len(cells), width, len(multipliers)
    (6, 3, 2)
    >>> sketch_matrix(CountMin(2, 3).to_bytes())
    Traceback (most recent call last):
    ...
    ValueError: `sketch` must hash with Spark's family (hashing='spark') to be estimated ...
    """
    cm = CountMin.from_bytes(blob)
    config = cm.config
    if config.hashing != "spark":
        msg = ("`sketch` must hash with Spark's family (hashing='spark') to be estimated from a "
               f"DataFrame; got hashing={config.hashing!r}")
        raise ValueError(msg)
    cells = np.asarray(cm.counts, dtype=np.float64).ravel().tolist()
    return cells, int(config.width), spark_multipliers(config.seed, config.depth).tolist()


def _jvm_estimate(key: Column) -> Column:
    """Spark's Count-Min estimate of ``key`` from the broadcast matrix columns.

    Row ``r`` hashes ``h = a_r * key`` (a long product that wraps), ``h += h >> 32``, and takes
    the low 31 bits modulo the width. Only the low 31 bits of ``h`` and of ``h >> 32`` count,
    so the product is made of the key's 32-bit halves, whose partial products fit in a long:
    ``low31(a * lo) + low31((a * lo >> 32) + a * hi)``.
    """
    lo = key.bitwiseAND(F.lit(_LOW32))
    hi = F.shiftright(key, 32)

    def cell(a: Column, row: Column) -> Column:
        low = a * lo
        folded = (low.bitwiseAND(F.lit(_LOW31))
                  + (F.shiftright(low, 32) + a * hi).bitwiseAND(F.lit(_LOW31)))
        column = F.pmod(folded.bitwiseAND(F.lit(_LOW31)), F.col("wk_width"))
        return F.element_at(F.col("wk_counts"), (row * F.col("wk_width") + column + 1).cast("int"))

    low = F.array_min(F.transform(F.col("wk_multipliers"), cell))
    return F.greatest(F.bround(low, 0), F.lit(0.0)).cast("long")


def heavy_hitters(
    snapshots: DataFrame,
    candidates: DataFrame | list[Any],
    phi: float,
    item: ColumnLike = "item",
    *,
    latest: bool = False,
) -> DataFrame:
    """Candidates whose estimated window frequency reaches ``phi`` times the window count,
    at every state of the coordinator.

    The snapshots are replayed in order of ``time`` (then ``shard``, ``seq``): after each one
    the coordinator's view is the sum of the latest matrix of every shard so far (DistCM), its
    window count ``W`` the view's mean row sum, and every candidate with
    ``estimate >= phi * W`` (and ``estimate > 0``) is reported. The replay is split into
    ranges of :data:`RANGE_VIEWS` consecutive views, each a Spark group of its own that
    starts from the latest snapshot of every shard before its range. With ``latest=True``
    only the final view (that of :func:`merge_count_min`) is evaluated, from the latest
    snapshot of each shard selected in the JVM.

    Parameters
    ----------
    snapshots : DataFrame
        Output of :func:`windowed_count_min` (batch; see :func:`merge_count_min` for streams).
    candidates : DataFrame or list
        Items to test: a DataFrame with column ``item`` (e.g. the distinct items of the input;
        their keys travel to every range as one array, so keep them to a few million) or a
        list of values.
    phi : float
        In (0, 1].
    item : str or Column
        The candidates' item: a column name, or with a DataFrame of candidates any
        expression of its columns (e.g. ``F.lower("host")``). The output's item column is
        named as Spark names it in a ``select`` (``item``, ``lower(host)``); with a list of
        candidates it is a name, that of the output's column.
    latest : bool
        Only the final view.

    Returns
    -------
    DataFrame
        ``view`` (coordinator state number, from 0), ``time``, ``window_start`` and
        ``window_end`` (the window of the snapshot that produced the view), ``shard`` (whose
        snapshot produced the view), the item column (see ``item``), ``estimate``,
        ``window_count``, ``threshold``.

    Examples
    --------
    >>> from windowkit.spark.countmin import windowed_count_min
    >>> df = spark.createDataFrame([(x,) for x in "aaaaabbbc"], "item string")
    >>> snaps = windowed_count_min(df, "item", window=100, shards=1, algorithm="perfect")
    >>> heavy_hitters(snaps, ["a", "b", "c"], 0.3, latest=True).select("item", "estimate"
    ...               ).orderBy("item").collect()
    [Row(item='a', estimate=5), Row(item='b', estimate=3)]
    """
    check_in_range("phi", phi, 0, 1, low_open=True)
    require_batch(snapshots, "snapshots")
    spark = snapshots.sparkSession
    if isinstance(candidates, DataFrame):
        resolved = resolve_column(candidates, item, "item")
        column = resolved.name
        cand = candidates.select(resolved.column.alias(column)).dropna().distinct()
    else:
        if not isinstance(item, str):
            msg = (f"`item` must be a column name when `candidates` is a list (it names the "
                   f"output's item column); got {item!r} ({type(item).__name__})")
            raise ValueError(msg)
        column = item
        values = [v for v in candidates if v is not None]
        if not values:
            msg = "`candidates` must hold at least one non-null item"
            raise ValueError(msg)
        cand = spark.createDataFrame([(v,) for v in dict.fromkeys(values)], [column])
    cand = cand.withColumn(ITEM_KEY, item_key(quoted(column), cand.schema[column].dataType))
    keys = cand.agg(F.sort_array(F.collect_list(ITEM_KEY)).alias("wk_keys"))
    groups, times = replay_groups(snapshots, keys, latest=latest)
    schema = T.StructType([
        T.StructField("view", T.LongType()), T.StructField("wk_order", T.LongType()),
        T.StructField("shard", T.IntegerType()), T.StructField(ITEM_KEY, T.LongType()),
        T.StructField("estimate", T.LongType()), T.StructField("window_count", T.DoubleType()),
        T.StructField("threshold", T.DoubleType()),
    ])
    phi = float(phi)

    def replay(pdf: pd.DataFrame) -> pd.DataFrame:
        return _replay_range(pdf, phi, latest)

    views = groups.groupBy("wk_range").applyInPandas(replay, schema)
    out = views.join(F.broadcast(cand), ITEM_KEY).join(times, "wk_order")
    return out.select("view", "time", "window_start", "window_end", "shard", quoted(column),
                      "estimate", "window_count", "threshold")


# ------------------------------------------------------------------ the SQL table function
def heavy_hitters_operator(*, candidates: object, phi: float, latest: bool = False,
                           **_: object) -> functools.partial:
    """The operator of :func:`heavy_hitters`' SQL table function, from its parameters
    (keywords; the others are ignored), checked as the function checks them: the DistCM
    coordinator replaying the snapshots (see
    :class:`~windowkit.core.sketches.coordinator.HeavyHittersOperator`), the candidates a list
    of texts or integers, keyed as :func:`item_key` keys them in the JVM.

    Examples
    --------
    >>> heavy_hitters_operator(candidates=["a", "b", "a"], phi=0.1)().keys.size
    2
    >>> heavy_hitters_operator(candidates=[1.5], phi=0.1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `candidates` must be an array of texts or of integers in SQL; got [1.5]
    """
    check_in_range("phi", phi, 0, 1, low_open=True)
    values = _sql_candidates(candidates)
    keys = [spark_xxhash64(v) for v in values]
    return functools.partial(HeavyHittersOperator, keys, phi, latest)


def _sql_candidates(candidates: object) -> list:
    """The distinct non-null candidates of a SQL call, in their order; all texts or all
    integers (the types a list of them becomes a column of)."""
    values = list(dict.fromkeys(v for v in candidates if v is not None)) if isinstance(
        candidates, list) else None
    kinds = {str if isinstance(v, str) else int if isinstance(v, int)
             and not isinstance(v, bool) else None for v in values or []}
    if not values or len(kinds) != 1 or None in kinds:
        msg = (f"`candidates` must be an array of texts or of integers in SQL; got "
               f"{candidates!r}")
        raise ValueError(msg)
    return values


def heavy_hitters_time_unit(*, table: T.StructType, **_: object) -> str | None:
    """The unit :func:`heavy_hitters`' SQL table function reads the snapshots' ``time`` in:
    an integer one (a position, or a time in its own unit) is carried as it is.

    Examples
    --------
    >>> heavy_hitters_time_unit(table=T.StructType.fromDDL("time long"))
    'us'
    """
    return "us" if isinstance(table["time"].dataType, T.IntegralType) else None


def heavy_hitters_inputs(operator: object, *, table: T.StructType, **_: object
                         ) -> dict[str, str]:
    """The snapshot columns :func:`heavy_hitters`' SQL table function reads, the window's
    bounds in µs as its ``time`` is read.

    Examples
    --------
    >>> table = T.StructType.fromDDL("shard int, seq long, n_seen long, time long, "
    ...                              "window_start long, window_end long, sketch binary")
    >>> heavy_hitters_inputs(None, table=table)["window_start"]
    'CAST(`window_start` AS BIGINT)'
    """
    missing = [c for c in SNAPSHOT_COLUMNS if c not in table.names]
    if missing:
        msg = (f"`snapshots` must be windowed_count_min's output; the table lacks "
               f"{', '.join(missing)}")
        raise ValueError(msg)
    unit = heavy_hitters_time_unit(table=table)
    bounds = {name: EventTime(None, *time_kind(table[name].dataType, name, unit)).micros_sql(
        quoted_name(name)) for name in ("window_start", "window_end")}
    return {SHARD: SHARD, "seq": "seq", "sketch": "sketch", **bounds}


def heavy_hitters_valid(operator: object, micros: str, columns: dict[str, str]) -> str:
    """The snapshots :func:`heavy_hitters` replays: those with a sketch (a rejected row of
    :func:`windowed_count_min` has none).

    Examples
    --------
    >>> heavy_hitters_valid(None, "t", {"sketch": "s"})
    '(s) IS NOT NULL'
    """
    return f"({columns['sketch']}) IS NOT NULL"


def heavy_hitters_columns(operator: HeavyHittersOperator, *, candidates: object,
                          item: object = "item", **_: object) -> list:
    """:func:`heavy_hitters`' columns for its SQL table function: the item under ``item``'s
    name, of the candidates' type.

    Examples
    --------
    >>> op = heavy_hitters_operator(candidates=["a"], phi=0.1)()
    >>> [c if isinstance(c, str) else c[0] for c in heavy_hitters_columns(
    ...     op, candidates=["a"], item="dst")]  # doctest: +NORMALIZE_WHITESPACE
    ['view', 'time', 'window_start', 'window_end', 'shard', 'dst', 'estimate',
     'window_count', 'threshold']
    """
    if not isinstance(item, str):
        msg = f"`item` must be a column name (it names the output's item column); got {item!r}"
        raise ValueError(msg)
    values = np.array(_sql_candidates(candidates), dtype=object)
    kind = T.StringType() if isinstance(values[0], str) else T.LongType()
    return ["view", "time", "window_start", "window_end", (SHARD, SHARD, T.IntegerType()),
            (item, lambda part: values[part[CANDIDATE].to_numpy()], kind), "estimate",
            "window_count", "threshold"]


def replay_groups(snapshots: DataFrame, keys: DataFrame, *, latest: bool = False
                  ) -> tuple[DataFrame, DataFrame]:
    """The rows each replay group of :func:`heavy_hitters` gets, and each view's time.

    Returns ``(groups, times)``. ``groups``: ``wk_range`` (the group), ``wk_role`` (0: a
    shard's latest snapshot before the range, the view it starts from; 1: a snapshot of the
    range; 2: the candidates' keys), ``shard``, ``wk_order`` (the snapshot's place in the
    replay, from 1), ``sketch``, ``wk_keys``. ``times``: ``wk_order``, ``time``,
    ``window_start`` and ``window_end``.
    ``keys``: one row, the candidates' keys as an array column ``wk_keys``.

    Examples
    --------
    >>> from windowkit.spark.countmin import windowed_count_min
    >>> df = spark.createDataFrame([(i % 3, i) for i in range(200)], "item long, t long")
    >>> snaps = windowed_count_min(df, "item", "t", window=50, shards=2, snapshot_every=1)
    >>> keys = spark.createDataFrame([([1, 2],)], "wk_keys array<long>")
    >>> groups, _ = replay_groups(snaps, keys)
    >>> def per_range(role):
    ...     rows = groups.filter(f"wk_role = {role}").groupBy("wk_range").count()
    ...     return [tuple(r) for r in rows.orderBy("wk_range").collect()]
    >>> per_range(1)  # 202 snapshots (a final one per shard), 64 views per range
    [(0, 64), (1, 64), (2, 64), (3, 10)]
    >>> per_range(0)  # every later range starts from both shards' earlier snapshots
    [(1, 2), (2, 2), (3, 2)]
    """
    if latest:  # the newest snapshot of each shard, chosen in the JVM: one view
        good = latest_snapshots(snapshots)
    elif REJECTED in snapshots.columns:
        good = snapshots.filter(F.col(REJECTED).isNull())
    else:
        good = snapshots
    good = good.select(*SNAPSHOT_COLUMNS)
    # the replay order is decided in the JVM over the snapshots' small columns; times never
    # reach pandas (year 9999 would not fit)
    order = Window.orderBy(F.col("time").asc_nulls_first(), F.col(SHARD), F.col("seq"))
    everything = Window.partitionBy()
    ranked = good.select(SHARD, "seq", "time", "window_start", "window_end").withColumns({
        "wk_order": F.row_number().over(order).cast("long"),
        "wk_size": F.greatest(F.lit(RANGE_VIEWS),
                              2 * F.size(F.collect_set(SHARD).over(everything))).cast("long"),
    })
    ranked = ranked.withColumn(
        "wk_range", F.lit(0).cast("long") if latest
        else F.expr("(wk_order - 1) div wk_size"))
    ranked = ranked.withColumns({
        "wk_last_range": F.max("wk_range").over(everything),
        "wk_next": F.lead("wk_order").over(Window.partitionBy(SHARD).orderBy("wk_order")),
    })
    sketches = good.select(SHARD, "seq", "sketch")
    own = ranked.select("wk_range", F.lit(1).alias("wk_role"), SHARD, "seq", "wk_order")
    # a snapshot starts every later range up to (and with) the one its shard's next falls in
    first = F.col("wk_range") + 1
    last = F.coalesce(F.expr("(wk_next - 1) div wk_size"), F.col("wk_last_range"))
    starts = ranked.filter(first <= last).select(
        F.explode(F.sequence(first, last)).alias("wk_range"), F.lit(0).alias("wk_role"), SHARD,
        "seq", "wk_order")
    snapshot_rows = own.unionByName(starts).join(sketches, [SHARD, "seq"]).select(
        "wk_range", "wk_role", SHARD, "wk_order", "sketch",
        F.lit(None).cast("array<long>").alias("wk_keys"))
    # The latest view is range 0. Its keys are not joined to ranked's ranges: that constant
    # would let Spark prune the join down to the snapshots' rows and run their Python again.
    ranges = (keys.select(F.lit(0).cast("long").alias("wk_range")) if latest
              else ranked.select("wk_range").distinct())
    key_rows = ranges.crossJoin(F.broadcast(keys)).select(
        "wk_range", F.lit(2).alias("wk_role"), F.lit(None).cast("int").alias(SHARD),
        F.lit(None).cast("long").alias("wk_order"), F.lit(None).cast("binary").alias("sketch"),
        "wk_keys")
    return (snapshot_rows.unionByName(key_rows),
            ranked.select("wk_order", "time", "window_start", "window_end"))


def _replay_range(pdf: pd.DataFrame, phi: float, latest: bool) -> pd.DataFrame:
    """One range: start from its shards' earlier snapshots, then after each of its own test
    the candidates on the coordinator's view."""
    key_rows = pdf[pdf["wk_role"] == 2]
    keys = (np.asarray(key_rows["wk_keys"].iloc[0], dtype=np.int64) if len(key_rows)
            else np.zeros(0, dtype=np.int64))
    current: dict[int, np.ndarray] = {}
    for r in pdf[pdf["wk_role"] == 0].itertuples(index=False):
        current[int(r.shard)] = _counts(r.sketch)
    own = pdf[pdf["wk_role"] == 1].sort_values("wk_order", kind="stable")
    cols: np.ndarray | None = None
    out = []
    for pos, r in enumerate(own.itertuples(index=False)):
        cm = CountMin.from_bytes(bytes(r.sketch))
        if cols is None:
            cols = cm.config.columns(keys)
        current[int(r.shard)] = np.asarray(cm.counts, dtype=np.float64)
        if latest and pos < len(own) - 1:
            continue
        hit, estimates, window_count, threshold = heavy_hitters_of_view(
            list(current.values()), cols, phi)
        out.append(pd.DataFrame({
            "view": 0 if latest else int(r.wk_order) - 1, "wk_order": int(r.wk_order),
            "shard": int(r.shard), ITEM_KEY: keys[hit], "estimate": estimates,
            "window_count": window_count, "threshold": threshold,
        }))
    if not out:
        return pd.DataFrame({c: [] for c in _VIEW_COLUMNS})
    return pd.concat(out, ignore_index=True)[_VIEW_COLUMNS]


def _counts(blob: Any) -> np.ndarray:
    return np.asarray(CountMin.from_bytes(bytes(blob)).counts, dtype=np.float64)


_VIEW_COLUMNS = ["view", "wk_order", "shard", ITEM_KEY, "estimate", "window_count",
                 "threshold"]
