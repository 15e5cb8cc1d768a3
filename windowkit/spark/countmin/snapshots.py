"""The snapshot stream: :func:`windowed_count_min` runs one windowed sketch per DistCM site.

Every row goes to one of ``shards`` sites (:mod:`windowkit.spark.countmin.sites`); each site is
one shard of the generic adapter (:func:`windowkit.spark.adapter.run_operator`) running the
core operator of :func:`~windowkit.spark.countmin.operator.make_operator`, and sends its count
matrix as snapshots: ``shard, seq, n_seen, time, sketch``.

On a batch DataFrame with the default cadence, the operators of Perfect, Simple and
Proportional declare that their state is a sum of parts, and the adapter runs them in its
mergeable mode (:mod:`windowkit.spark.mergeable`): the rows of the last window blocks are
sketched where they are read (Simple's and Proportional's block matrices by Spark's own
``count_min_sketch`` in the JVM, Perfect's in Python), and the parts merged per site; no row
is shuffled. Splitter's sub-cells are not a sum of parts: its sites see their rows in order.

Every shard's clock is moved to the same last step before its final snapshot (the input's last
step on a batch DataFrame, found by a scalar subquery of the same plan; the watermark on a
stream), so every shard's window is the global steps ``(P - N, P]`` and, Count-Min being
linear, the sum of the shards' matrices is the matrix of the global window.
"""

from __future__ import annotations

import functools
from typing import Literal

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.durations import FIRST_TIMESTAMP, LAST_TIMESTAMP
from windowkit.core.sketches.operator import (
    DEFAULT_DELTA,
    DEFAULT_EPSILON,
    ITEM,
)
from windowkit.core.validation import check_int
from windowkit.spark.adapter import DETAIL_OUT, REJECTED, SHARD_OUT, OperatorJob, run_operator
from windowkit.spark.columns import quoted_name
from windowkit.spark.countmin.operator import Algorithm, make_operator, step_micros
from windowkit.spark.countmin.sites import (
    _POS,
    DEFAULT_SHARDS,
    POSITION_MICROS,
    POSITION_UNIT,
    SHARD,
    _is_sequence,
    _prepare,
    item_key_sql,
)
from windowkit.spark.event_time import TimeUnit, event_time
from windowkit.spark.keys import KeyLike, key_text_sql
from windowkit.spark.sql import Sites

SNAPSHOT_COLUMNS = ["shard", "seq", "n_seen", "time", "window_start", "window_end", "sketch"]


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
    by: KeyLike = None,
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
        (timestamp, timestamp string, or integer with ``time_unit``; batch only: the
        counted rows are ranked by it in one partition, rows at one time in an order of
        their contents, so the input's order never changes the result); without it (batch
        only), the input's order.
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
    by : str, Column or list of them, optional
        Site id column (the paper's nodes): rows are routed to ``pmod(xxhash64(by), shards)``;
        a list of columns is one site id made of all of them (e.g. ``["region", "router"]``).
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
        other columns are null except ``shard``, the site it was routed to). Lazy, like any
        DataFrame: no Spark job runs until an action on it.

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
    >>> from windowkit.spark.countmin import estimate_frequency, merge_count_min
    >>> estimate_frequency(merge_count_min(snaps), df.select("item").distinct(), "item"
    ...                    ).orderBy("item").collect()
    [Row(item=0, estimate=2), Row(item=1, estimate=2), Row(item=2, estimate=2)]
    """
    factory = count_min_operator(window=window, unit=unit, tick=tick, algorithm=algorithm,
                                 epsilon=epsilon, delta=delta, snapshot_every=snapshot_every,
                                 seed=seed, tau=tau, mu=mu)  # validates before any job
    tick_micros = step_micros(unit, tick)
    shards = check_int("shards", DEFAULT_SHARDS if shards is None else shards, 1)
    prepared, key, site = _prepare(df, item, time, by, shards, unit, time_unit)
    item_col = F.col(item) if isinstance(item, str) else item
    inputs = {ITEM: key}
    # The site is the adapter's shard: each Spark group runs exactly one site's operator.
    job = OperatorJob(factory=factory, inputs=inputs, valid=item_col.isNotNull())
    step, step_unit = _step_column(df, time, unit, time_unit)
    out = run_operator(prepared, job, time=step, key=None, shards=shards, late=late,
                       shard=site, time_unit=step_unit,
                       times_like=event_time(prepared, _POS, "us"))
    return out.select(*_snapshot_columns(df, time, unit, time_unit, window, tick_micros))


def _step_column(df: DataFrame, time: str | Column | None, unit: str,
                 time_unit: str | None) -> tuple[str | Column, str]:
    """The column (and its unit) whose µs are each row's step, ``_POS``: the user's own time
    column where it is one (the adapter can then filter on it where it is read), else
    ``_POS``."""
    if time is not None and unit == "ticks":
        return time, time_unit
    if time is not None and _is_sequence(df, time, time_unit):
        return time, POSITION_UNIT
    return _POS, "us"


def _snapshot_columns(df: DataFrame, time: str | Column | None, unit: str,
                      time_unit: str | None, window: int, tick_micros: int
                      ) -> list[str | Column]:
    """The snapshot stream's columns, its ``time`` (the operators' µs step) and its window's
    bounds back in the input's kind: times for ``unit="ticks"``, positions for
    ``unit="samples"``.

    The window is the ``window`` steps up to and including the one ``time`` falls in, i.e.
    ``[window_start, window_end)`` with both bounds on whole steps from 0: the window
    ``window(time, window * tick, tick)`` gives that ends with the current tick."""
    step = f"(time - pmod(time, {tick_micros}))"
    # A window reaching beyond the times Spark holds is cut at the first or the last one (and
    # the arithmetic stays within a long).
    reach = min((window - 1) * tick_micros, 2**62)
    # (not greatest() or least(): they skip nulls, and a rejected row's time is null)
    start, end = f"{step} - {reach}", f"{step} + {tick_micros}"
    bounds = {"time": "time",
              "window_start": f"if({start} < {FIRST_TIMESTAMP}, {FIRST_TIMESTAMP}, {start})",
              "window_end": f"if({end} > {LAST_TIMESTAMP}, {LAST_TIMESTAMP}, {end})"}
    if unit == "ticks":
        clock = event_time(df, time, time_unit)
        restored = {name: clock.restore(F.expr(micros)) for name, micros in bounds.items()}
    else:  # integer arithmetic: a double loses positions beyond 2**53 / 1000
        p = POSITION_MICROS
        restored = {name: F.expr(f"(({micros}) - pmod({micros}, {p})) div {p}")
                    for name, micros in bounds.items()}
    # (nullable, as the adapter's mergeable mode and the SQL table function give it: the same
    # schema whichever way the sites ran)
    shard = F.when(F.col(SHARD).isNotNull(), F.col(SHARD)).alias(SHARD)
    return [shard, "seq", "n_seen", *[c.alias(n) for n, c in restored.items()], "sketch",
            REJECTED, DETAIL_OUT]


def count_min_operator(*, window: int, unit: str = "samples", tick: str | int | None = None,
                       algorithm: str = "splitter", epsilon: float = DEFAULT_EPSILON,
                       delta: float = DEFAULT_DELTA, snapshot_every: int | None = None,
                       seed: int = 0, tau: float | None = None, mu: float | None = None,
                       **_: object) -> functools.partial:
    """The operator factory every site of :func:`windowed_count_min` runs, from its
    parameters (keywords; the others are ignored), checked as the function checks them: also
    its SQL table function's.

    Examples
    --------
    >>> count_min_operator(window=10, algorithm="perfect")().sketch.window
    10
    >>> count_min_operator(window=10, unit="ticks")
    Traceback (most recent call last):
    ...
    ValueError: `tick` is required with unit='ticks' (e.g. tick='1 second')
    """
    params = {"unit": unit, "tick": tick, "algorithm": algorithm, "epsilon": epsilon,
              "delta": delta, "snapshot_every": snapshot_every, "seed": seed, "tau": tau,
              "mu": mu}
    make_operator(window, **params)
    return functools.partial(make_operator, window, **params)


# ------------------------------------------------------------------ the SQL table function
def count_min_time_unit(*, table: T.StructType, time: object, unit: str = "samples",
                        time_unit: str | None = None, **_: object) -> str | None:
    """The unit the SQL table function of :func:`windowed_count_min` reads its ``time`` in:
    a sequence number's positions as :data:`POSITION_MICROS` µs each, as the function does.

    Examples
    --------
    >>> count_min_time_unit(table=T.StructType.fromDDL("seq long"), time="seq")
    'ms'
    """
    field = _field(table, "time", time)
    sequence = (unit == "samples" and time_unit is None
                and isinstance(field.dataType, T.IntegralType))
    return POSITION_UNIT if sequence else time_unit


def count_min_inputs(operator: object, *, table: T.StructType, item: object, **_: object
                     ) -> dict[str, str]:
    """The operator's input of the SQL table function of :func:`windowed_count_min`: each
    row's item key (:func:`~windowkit.spark.countmin.sites.item_key`), null for a null item.

    Examples
    --------
    >>> count_min_inputs(None, table=T.StructType.fromDDL("ip string"), item="ip")
    {'item': 'CASE WHEN `ip` IS NOT NULL THEN xxhash64(`ip`) END'}
    """
    field = _field(table, "item", item)
    column = quoted_name(field.name)
    return {ITEM: f"CASE WHEN {column} IS NOT NULL THEN {item_key_sql(column, field.dataType)} END"}


def count_min_valid(operator: object, micros: str, columns: dict[str, str]) -> str:
    """The SQL table function's check of a row, as :func:`windowed_count_min`'s: an item.

    Examples
    --------
    >>> count_min_valid(None, "t", {"item": "k"})
    '(k) IS NOT NULL'
    """
    return f"({columns[ITEM]}) IS NOT NULL"


def count_min_sql_sites(*, table: T.StructType, micros: str, time: object,
                        by: object = None, shards: int | None = None, unit: str = "samples",
                        time_unit: str | None = None, **_: object) -> Sites:
    """The sites of the SQL table function of :func:`windowed_count_min`, as
    :func:`~windowkit.spark.countmin.sites.count_min_sites` picks them: the hash of ``by``,
    of the tick, or round robin over the positions (a sequence number's, or the rows' ranks
    in time order); ``micros`` is the SQL text of a row's time in µs.

    Examples
    --------
    >>> table = T.StructType.fromDDL("ip string, t timestamp")
    >>> count_min_sql_sites(table=table, micros="m", time="t", shards=2)
    Sites(shard='CAST(NULL AS INT)', shards=2, ranked=1000)
    >>> count_min_sql_sites(table=table, micros="m", time="t", by="ip").shard
    'CAST(pmod(xxhash64(`ip`), 4) AS INT)'
    """
    shards = check_int("shards", DEFAULT_SHARDS if shards is None else shards, 1)
    sequence = count_min_time_unit(table=table, time=time, unit=unit,
                                   time_unit=time_unit) == POSITION_UNIT
    ranked = POSITION_MICROS if unit == "samples" and not sequence else None
    if by is not None:
        names = by if isinstance(by, list) else [by]
        fields = [_field(table, "by", name) for name in names]
        text = (item_key_sql(quoted_name(names[0]), fields[0].dataType) if len(names) == 1
                else f"xxhash64({key_text_sql(names)})")
        shard = f"pmod({text}, {shards})"
    elif unit == "ticks":
        shard = f"pmod(xxhash64({micros}), {shards})"
    elif sequence:
        shard = f"coalesce(pmod(CAST({quoted_name(time)} AS BIGINT), {shards}), 0)"
    else:  # round robin over the ranks
        shard = "NULL"
    return Sites(f"CAST({shard} AS INT)", shards, ranked)


def count_min_columns(operator: object, *, table: T.StructType, time: object, window: int,
                      unit: str = "samples", **_: object) -> list:
    """:func:`windowed_count_min`'s columns as its projection makes them, for its SQL table
    function: the window's last step and its bounds (positions for ``unit="samples"``, times
    in the time column's kind for ticks), from the operator's µs.

    Examples
    --------
    >>> op = count_min_operator(window=3)()
    >>> table = T.StructType.fromDDL("ip string, seq long")
    >>> [c if isinstance(c, str) else c[0] for c in count_min_columns(
    ...     op, table=table, time="seq", window=3)]  # doctest: +NORMALIZE_WHITESPACE
    ['shard', 'seq', 'n_seen', 'time', 'window_start', 'window_end', 'sketch', 'rejected',
     'detail']
    """
    tick = operator.tick_micros

    def bounds(part: pd.DataFrame) -> dict[str, np.ndarray]:
        return step_bounds(part["time"].to_numpy(dtype=np.int64), window, tick)

    if unit == "ticks":
        kind: object = "timestamp"

        def restored(micros: np.ndarray) -> np.ndarray:
            return micros
    else:
        kind = T.LongType()

        def restored(micros: np.ndarray) -> np.ndarray:
            return (micros - micros % POSITION_MICROS) // POSITION_MICROS

    return [(SHARD, SHARD_OUT, T.IntegerType()), "seq", "n_seen",
            *[(name, lambda part, n=name: restored(bounds(part)[n]), kind)
              for name in ("time", "window_start", "window_end")],
            "sketch", REJECTED, DETAIL_OUT]


def step_bounds(times: np.ndarray, window: int, tick_micros: int) -> dict[str, np.ndarray]:
    """The snapshots' ``time`` (µs) and their windows' bounds in µs, as
    :func:`windowed_count_min` computes them in the JVM (``_snapshot_columns``).

    Examples
    --------
    >>> step_bounds(np.array([5500]), 3, 1000)
    {'time': array([5500]), 'window_start': array([3000]), 'window_end': array([6000])}
    """
    step = times - times % tick_micros
    start = step - min((window - 1) * tick_micros, 2**62)
    end = step + tick_micros
    return {"time": times, "window_start": np.maximum(start, FIRST_TIMESTAMP),
            "window_end": np.minimum(end, LAST_TIMESTAMP)}


def _field(table: T.StructType, parameter: str, name: object) -> T.StructField:
    """The column ``name`` of the ``table``, or the error naming ``parameter``."""
    if not isinstance(name, str) or name not in table.names:
        msg = (f"`{parameter}` must name a column of the table ({', '.join(table.names)}); "
               f"got {name!r}")
        raise ValueError(msg)
    return table[name]


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
        snapshots = snapshots.filter(f"{REJECTED} IS NULL")
    # SQL text: one expression costs one call to the JVM
    fields = ", ".join(f"`{c}`" for c in SNAPSHOT_COLUMNS)
    newest = F.expr(f"max_by(struct({fields}), seq) AS s")
    return snapshots.groupBy(SHARD).agg(newest).select("s.*")


