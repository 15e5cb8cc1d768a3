"""``multi_granular`` and ``recurring_items``: multi-granular sliding windows on DataFrames.

One operator maintains every level (``RANGES 1 HOUR, 10 MINUTES, 1 MINUTE SLIDES 5 MINUTES,
1 MINUTE, 1 SECOND``) per key in the stairwise chain of
:mod:`windowkit.core.multigranular`, instead of one ``window()`` aggregation per level that
copies every row into every window of every level.

On a batch DataFrame the rows are first reduced in the JVM to one *cell* per key and finest
granule (``groupBy(key, granule)`` with count, sum, min, max and centred moments), so Python
sees one row per key and granule, not one per input row (and one per malformed row, which
rides through the same scan and aggregation in a group of its own); the chains then run per
shard through the generic adapter. On a streaming DataFrame the raw rows go through the
adapter (a JVM aggregation before a stateful Python operator would hold its own state across
micro-batches).
Reports are the same either way.

Distinct counts (``distinct=COL``): on a batch the same ``groupBy(key, granule)`` also builds
each granule's HyperLogLog sketch of ``COL`` in the JVM (``hll_sketch_agg``, Apache
DataSketches' binary format); the core merges those bytes along the stairwise chain with the
DataSketches Python library, which reads and writes the same format. On a stream the core
sketches the rows' values itself, with the same hash and sketch type, so both give the same
sketches and the same estimates. Estimating in the core rather than with a windowed
``hll_union_agg`` in the JVM keeps one definition of the levels' reports (the same rows,
``window_start`` and ``window_end`` as the other aggregates) and gives streaming its state.
"""

from __future__ import annotations

import datetime as dt
import functools

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.multigranular import (
    AggregatorConfig,
    MultiGranularAggregator,
    RecurringItems,
)
from windowkit.core.multigranular.aggregator import (
    CELL_HLL,
    DEFAULT_AGGREGATES,
    ITEM,
    ReportMode,
    make_spec,
)
from windowkit.core.multigranular.distinct import DEFAULT_PRECISION
from windowkit.core.multigranular.spec import MultiGranularSpec
from windowkit.core.operator import KEY
from windowkit.core.validation import check_choice
from windowkit.spark.adapter import (
    DETAIL_OUT,
    REJECTED,
    SHARD_OUT,
    OperatorJob,
    row_json,
    run_operator,
    user_column,
)
from windowkit.spark.event_time import EventTime, TimeUnit, event_time
from windowkit.spark.keys import Key, KeyLike, resolve_key
from windowkit.spark.rejected import deprecated_splitter

_KEY = "wk_mg_key"
_VALUE = "wk_mg_value"
_ITEM = "wk_mg_item"
_GRANULE = "wk_mg_g"
_END = "wk_mg_end"
_DETAIL = "wk_mg_detail"


def multi_granular(
    df: DataFrame,
    time: str | Column,
    window: str | None = None,
    *,
    levels: list[tuple[str, str]] | None = None,
    by: KeyLike = None,
    value: str | Column | None = None,
    aggregates: tuple[str, ...] | list[str] = DEFAULT_AGGREGATES,
    regression: bool = False,
    weights: list[float] | None = None,
    report: ReportMode = "periodic",
    distinct: str | Column | None = None,
    distinct_precision: int = DEFAULT_PRECISION,
    origin: int | str | dt.datetime = 0,
    closed: str = "left",
    late: str | None = "1 minute",
    shards: int | None = None,
    time_unit: TimeUnit | None = None,
) -> DataFrame:
    """Aggregates of ``value`` per ``by`` key over every level of a multi-granular window.

    Parameters
    ----------
    df : DataFrame
        Batch or streaming.
    time : str or Column
        Event time: a timestamp, ``timestamp_ntz`` (the wall-clock time it holds, whatever the
        session time zone), date or timestamp-string column, or an integer column with
        ``time_unit`` (see :mod:`windowkit.spark.event_time`).
    window : str, optional
        The paper's clause, e.g. ``"RANGES 1 HOUR, 1 MINUTE SLIDES 5 MINUTES, 1 SECOND"``.
    levels : list of (range, slide), optional
        Instead of ``window``: ``[("1 minute", "1 second"), ("1 hour", "5 minutes")]``.
    by : str, Column or list of them, optional
        The key: a column name, a Column or a list of them (a composite key); each key
        column comes first in the reports under its own name and type. One global key if
        omitted (a ``key`` column, empty). A row with a null in a key column is rejected as
        ``malformed``.
    value : str or Column
        The numeric column to aggregate (required unless only ``count`` is asked for). Rows
        whose value is null, NaN, ±inf or not a number are set aside as ``malformed``.
    aggregates : sequence of str
        Among ``count, sum, mean, min, max, variance, stddev``.
    regression : bool
        Add ``slope`` (per second) and ``intercept`` (the fitted value at the window's last
        instant) of the least-squares line through the rows of each scope.
    weights : list of float, optional
        One per level: add ``decayed_sum``, ``decayed_count``, ``decayed_mean`` over the
        levels' disjoint intervals.
    report : {"periodic", "continuous"}
        ``"periodic"``: each level reports when it slides; ``"continuous"``: every level
        reports at every finest slide.
    distinct : str or Column, optional
        Add ``distinct_<distinct>`` (``distinct`` for a Column): the estimated number of
        distinct values of this column in each report's scope (e.g. destinations per source:
        the port-scan question), from HyperLogLog sketches of its string values (nulls and
        empty strings are not counted). Exact while a scope holds up to a few hundred
        distinct values; beyond, a relative standard error of ``1.04 / sqrt(2 **
        distinct_precision)``.
    distinct_precision : int
        ``lgConfigK`` of the sketches, 4..21 (default 12, ~1.6%; 4 KiB per sketch).
    origin : int, str or datetime
        ``t0``: every level's windows start on whole slides from it (``window()``'s
        ``startTime``; default: the epoch): µs since the epoch, a datetime or a string like
        ``"2024-01-01 00:02:00"`` (naive ones read as UTC).
    closed : {"left", "right"}
        ``"left"`` (default): each level's windows are those of ``window(time, range,
        slide)``, ``[window_start, window_end)``, with the same rows and aggregates.
        ``"right"``: the paper's scopes ``(tc - range, tc]`` at each instant ``tc`` where the
        level slides, given as ``[tc - range + 1 µs, tc + 1 µs)``; rows before ``origin``
        are then ``malformed``.
    late : str, optional
        Streaming only: the watermark delay; rows behind the watermark come out as ``late``.
    shards : int, optional
        Spark groups the keys are hashed into (default one per core on a batch,
        ``spark.sql.shuffle.partitions`` on a stream).
    time_unit : {"s", "ms", "us", "ns"}, optional
        Unit of an integer ``time`` column (required for one, refused for any other).

    Returns
    -------
    DataFrame
        One row per key, level and window holding a row of the key: the key columns
        (``by``'s, or ``key``), ``level`` (0 = the finest, the paper's numbering), ``range``
        and ``slide`` (day-time intervals), ``window_start`` and ``window_end`` (in the kind
        of ``time``: timestamps, ``timestamp_ntz`` for ``timestamp_ntz`` and dates, integers
        in ``time_unit``), the aggregates; plus
        ``rejected`` (``malformed``/``late``, else null) and ``detail`` (the rejected row as
        JSON). :func:`windowkit.spark.split_rejected` separates them.

    Examples
    --------
    >>> import datetime as dt
    >>> t = [dt.datetime(2024, 1, 1) + dt.timedelta(seconds=s) for s in (1, 2, 30, 61)]
    >>> df = spark.createDataFrame([("a", x, v) for x, v in zip(t, [1.0, 2.0, 3.0, 4.0])],
    ...                            "src string, t timestamp, v double")
    >>> out = multi_granular(df, "t", "RANGES 2 MINUTES, 1 MINUTE SLIDES 1 MINUTE, 1 MINUTE",
    ...                      by="src", value="v", aggregates=["count", "sum"])
    >>> out.orderBy("window_end", "level").select("level", "window_start", "count", "sum").show()
    +-----+-------------------+-----+----+
    |level|       window_start|count| sum|
    +-----+-------------------+-----+----+
    |    0|2024-01-01 00:00:00|    3| 6.0|
    |    1|2023-12-31 23:59:00|    3| 6.0|
    |    0|2024-01-01 00:01:00|    1| 4.0|
    |    1|2024-01-01 00:00:00|    4|10.0|
    |    1|2024-01-01 00:01:00|    1| 4.0|
    +-----+-------------------+-----+----+
    <BLANKLINE>

    Level 1 holds exactly the windows of ``window("t", "2 minutes", "1 minute")``:

    >>> out.filter("level = 1").select("range", "slide").first()
    Row(range=datetime.timedelta(seconds=120), slide=datetime.timedelta(seconds=60))
    """
    factory = multi_granular_operator(**locals())  # the parameters alone, as SQL calls it too
    config = factory.keywords["config"]
    key = resolve_key(df, by)
    clock = event_time(df, time, time_unit)
    micros = clock.micros()
    value_col = F.lit(0.0) if value is None else (F.col(value) if isinstance(value, str)
                                                  else value)
    number = _number(value_col) if value is not None else F.lit(0.0)
    valid = number.isNotNull() & (micros >= F.lit(config.effective_spec.first_instant))
    renamed = {} if distinct is None else {"distinct": distinct_column(distinct)}
    project = _projection(renamed)
    # the sketches hash strings, in the JVM and in Python alike
    item = None if distinct is None else (
        F.col(distinct) if isinstance(distinct, str) else distinct).cast("string")
    if df.isStreaming:
        # a double column goes as it is (a row whose value is not a finite number is
        # malformed all the same), so it also carries the late rows' copy of itself
        shipped = (user_column(value) if isinstance(value, str)
                   and df.schema[value].dataType == T.DoubleType() else number)
        inputs = {"value": shipped} if item is None else {"value": shipped, ITEM: item}
        job = OperatorJob(factory=factory, inputs=inputs, valid=valid)
        return run_operator(df, job, time=F.timestamp_micros(micros), key=key, shards=shards,
                            late=late, project=project, times_like=clock)
    return _batch_cells(df, micros, key, number, valid, config, item, factory, shards,
                        project, clock)


def recurring_items(
    df: DataFrame,
    time: str | Column,
    item: str | Column,
    window: str | None = None,
    *,
    levels: list[tuple[str, str]] | None = None,
    by: KeyLike = None,
    report: ReportMode = "periodic",
    origin: int | str | dt.datetime = 0,
    closed: str = "left",
    late: str | None = "1 minute",
    shards: int | None = None,
    time_unit: TimeUnit | None = None,
) -> DataFrame:
    """Items present at least once in every disjoint interval of the levels, per key.

    At each report of level ``k`` (an instant where it slides), the items of the key that
    occur in each of the intervals ``[t_j, t_(j-1))`` for ``j <= k`` (level 0: its whole
    scope), with ``count``, the item's occurrences in level ``k``'s scope, to rank them.

    Parameters are those of :func:`multi_granular` (the same windows), with ``item`` the
    column whose values recur (cast to string; a null item makes the row malformed).

    Returns
    -------
    DataFrame
        The key columns (``by``'s, or ``key``), ``item``, ``level``, ``range``, ``slide``,
        ``window_start``, ``window_end``, ``count``, ``rejected``, ``detail``.

    Examples
    --------
    >>> import datetime as dt
    >>> rows = [("h", dt.datetime(2024, 1, 1, 0, m, 0), p)
    ...         for m, p in [(0, "tcp"), (0, "udp"), (2, "tcp"), (3, "tcp")]]
    >>> df = spark.createDataFrame(rows, "host string, t timestamp, proto string")
    >>> out = recurring_items(df, "t", "proto", "RANGES 4 MINUTES, 2 MINUTES SLIDES 2 MINUTES, "
    ...                       "1 MINUTE", by="host")
    >>> out.filter("level = 1").select("item", "window_start", "window_end", "count").show()
    +----+-------------------+-------------------+-----+
    |item|       window_start|         window_end|count|
    +----+-------------------+-------------------+-----+
    | tcp|2024-01-01 00:00:00|2024-01-01 00:04:00|    3|
    +----+-------------------+-------------------+-----+
    <BLANKLINE>
    """
    factory = recurring_operator(**locals())  # the parameters alone, as SQL calls it too
    spec = factory.keywords["window"]
    effective = spec.continuous() if report == "continuous" else spec
    key = resolve_key(df, by)
    clock = event_time(df, time, time_unit)
    micros = clock.micros()
    item_col = (F.col(item) if isinstance(item, str) else item).cast("string")
    valid = item_col.isNotNull() & (micros >= F.lit(effective.first_instant))
    project = _projection()
    if df.isStreaming:
        job = OperatorJob(factory=factory, inputs={"item": item_col}, valid=valid)
        return run_operator(df, job, time=F.timestamp_micros(micros), key=key, shards=shards,
                            late=late, project=project, times_like=clock)
    good = _good(valid, micros, key)
    base = _with_malformed(df, good, key, micros, effective, {_ITEM: item_col})
    cells = base.groupBy(_KEY, _ITEM, _GRANULE, _DETAIL).agg(F.expr("count(1) AS cell_n"),
                                                             _granule_end(effective))
    return _run_cells(cells, factory, {"item": F.expr(_ITEM), "cell_n": F.expr("cell_n")},
                      shards, project, clock, key)


def multi_granular_operator(*, window: str | None = None,
                            levels: list[tuple[str, str]] | None = None,
                            value: object = None,
                            aggregates: tuple[str, ...] | list[str] = DEFAULT_AGGREGATES,
                            regression: bool = False, weights: list[float] | None = None,
                            report: ReportMode = "periodic", distinct: object = None,
                            distinct_precision: int = DEFAULT_PRECISION,
                            origin: int | str | dt.datetime = 0, closed: str = "left",
                            **_: object) -> functools.partial:
    """The operator factory :func:`multi_granular` runs, from its parameters (keywords; the
    others are ignored), checked as the function checks them: also its SQL table function's.

    Examples
    --------
    >>> factory = multi_granular_operator(window="RANGES 2 MINUTES SLIDES 1 MINUTE",
    ...                                   value="v", aggregates=["count", "sum"])
    >>> [name for name, _ in factory().output_schema][-2:]
    ['count', 'sum']
    >>> multi_granular_operator(window="RANGES 2 MINUTES SLIDES 1 MINUTE")
    Traceback (most recent call last):
    ...
    ValueError: `value` is required for aggregates other than count and for regression
    """
    spec = make_spec(window, None if levels is None else [tuple(lv) for lv in levels], origin,
                     closed)
    config = AggregatorConfig(spec, tuple(aggregates), bool(regression),
                              None if weights is None else tuple(float(w) for w in weights),
                              report, distinct is not None, distinct_precision)
    if value is None and set(config.aggregates) - {"count"} | ({"x"} if regression else set()):
        msg = "`value` is required for aggregates other than count and for regression"
        raise ValueError(msg)
    return functools.partial(MultiGranularAggregator, config=config)


def recurring_operator(*, window: str | None = None,
                       levels: list[tuple[str, str]] | None = None,
                       report: ReportMode = "periodic", origin: int | str | dt.datetime = 0,
                       closed: str = "left", **_: object) -> functools.partial:
    """The operator factory :func:`recurring_items` runs, from its parameters (keywords; the
    others are ignored), checked as the function checks them: also its SQL table function's.

    Examples
    --------
    >>> recurring_operator(window="RANGES 2 MINUTES SLIDES 1 MINUTE")().output_schema[1]
    ('item', 'string')
    """
    check_choice("report", report, ("periodic", "continuous"))
    spec = make_spec(window, None if levels is None else [tuple(lv) for lv in levels], origin,
                     closed)
    return functools.partial(RecurringItems, window=spec, report=report)


def distinct_column(distinct: str | Column) -> str:
    """The name of the distinct count's column: ``distinct_<distinct>`` for a column name.

    Examples
    --------
    >>> distinct_column("dst")
    'distinct_dst'
    """
    return f"distinct_{distinct}" if isinstance(distinct, str) else "distinct"


def report_columns(operator: MultiGranularAggregator | RecurringItems, *,
                   distinct: object = None, **_: object) -> list[str | tuple[str, str]]:
    """The reports' columns after the key as :func:`multi_granular` and
    :func:`recurring_items` project them (the operator's, ``rejected``, ``detail``; the
    distinct count under its own name), for their SQL table functions.

    Examples
    --------
    >>> params = {"window": "RANGES 1 MINUTE SLIDES 1 MINUTE", "aggregates": ["count"],
    ...           "distinct": "dst"}
    >>> report_columns(multi_granular_operator(**params)(), **params)[-3:]
    [('distinct_dst', 'distinct'), 'rejected', 'detail']
    """
    renamed = {} if distinct is None else {"distinct": distinct_column(distinct)}
    return [(renamed[name], name) if name in renamed else name
            for name, _ in operator.output_schema if name != KEY] + [REJECTED, DETAIL_OUT]


def reports_valid_sql(operator: MultiGranularAggregator, micros: str,
                      inputs: dict[str, str]) -> str:
    """SQL twin of :func:`multi_granular`'s check of a row: a finite ``value`` (a double),
    at or after the levels' first instant.

    Examples
    --------
    >>> agg = multi_granular_operator(window="RANGES 1 MINUTE SLIDES 1 MINUTE",
    ...                               aggregates=["count"], closed="right")()
    >>> reports_valid_sql(agg, "t", {"value": "v"})
    "t >= 0 AND NOT isnan(v) AND abs(v) <> double('inf')"
    """
    value = inputs["value"]
    return (f"{micros} >= {operator.first_instant} AND NOT isnan({value}) AND "
            f"abs({value}) <> double('inf')")


def recurring_valid_sql(operator: RecurringItems, micros: str, inputs: dict[str, str]) -> str:
    """SQL twin of :func:`recurring_items`'s check of a row: an item, at or after the levels'
    first instant.

    Examples
    --------
    >>> rec = recurring_operator(window="RANGES 1 MINUTE SLIDES 1 MINUTE", closed="right")()
    >>> recurring_valid_sql(rec, "t", {"item": "i"})
    't >= 0 AND i IS NOT NULL'
    """
    return f"{micros} >= {operator.first_instant} AND {inputs['item']} IS NOT NULL"


#: Deprecated: :func:`windowkit.spark.split_rejected` splits every function's output.
split_reports = deprecated_splitter("split_reports")


# ---------------------------------------------------------------------- internals
def _batch_cells(df: DataFrame, micros: Column, key: Key, number: Column, valid: Column,
                 config: AggregatorConfig, item: Column | None, factory, shards: int | None,
                 project, clock: EventTime) -> DataFrame:
    """Batch: one cell per key and finest granule in the JVM (with its HLL sketch of ``item``
    for distinct counts), then the chains in Python."""
    spec = config.effective_spec
    good = _good(valid, micros, key)
    # only the moments the reports read: each costs the JVM's aggregation a buffer and the
    # transfer to Python a column (and each Column built costs the driver py4j calls)
    wanted = config.cell_columns
    columns = {_VALUE: number}
    if item is not None:
        columns[_ITEM] = item
    if {"cell_t_mean", "cell_t_m2", "cell_tv"} & set(wanted):
        # the row's time from its granule's last instant, within (-b0, 0]: doubles stay exact
        columns["wk_dt"] = (micros - _granule_end_micros(_granule_of(micros, spec), spec)
                            ).cast("double")
    base = _with_malformed(df, good, key, micros, spec, columns)
    sketch = ([F.hll_sketch_agg(_ITEM, config.distinct_precision).alias(CELL_HLL)]
              if config.distinct else [])
    cells = (base.groupBy(_KEY, _GRANULE, _DETAIL)
             .agg(*[F.expr(_CELL_AGGREGATES[c]).alias(c) for c in wanted], *sketch,
                  _granule_end(spec)))
    inputs = {c: F.expr(f"CAST({c} AS DOUBLE)") for c in wanted}
    if config.distinct:
        inputs[CELL_HLL] = F.expr(CELL_HLL)
    return _run_cells(cells, factory, inputs, shards, project, clock, key)


#: Each cell column as a SQL aggregate of the granule's rows (text: one py4j call per column).
_CELL_AGGREGATES = {
    "cell_n": "count(1)", "cell_sum": f"sum({_VALUE})", "cell_min": f"min({_VALUE})",
    "cell_max": f"max({_VALUE})", "cell_mean": f"avg({_VALUE})",
    "cell_m2": f"var_pop({_VALUE}) * count(1)", "cell_t_mean": "avg(wk_dt)",
    "cell_t_m2": "var_pop(wk_dt) * count(1)", "cell_tv": f"covar_pop(wk_dt, {_VALUE}) * count(1)",
}


def _granule_end(spec: MultiGranularSpec) -> Column:
    """The last instant of the cell's granule, a timestamp (an expression of a grouping
    column, so the cells carry it by name); null for a malformed row's group."""
    granule = F.col(_GRANULE)
    return F.when(granule >= 0, F.timestamp_micros(_granule_end_micros(granule, spec))
                  ).alias(_END)


def _granule_end_micros(granule: Column, spec: MultiGranularSpec) -> Column:
    """The last instant (µs) of finest ``granule`` (see :meth:`MultiGranularSpec.chain`)."""
    chain = spec.chain()
    return granule * F.lit(chain.finest_slide) + F.lit(chain.origin - spec.shift)


def _with_malformed(df: DataFrame, good: Column, key: Key, micros: Column,
                    spec: MultiGranularSpec, columns: dict[str, Column]) -> DataFrame:
    """The rows for the JVM aggregation by (key, granule, detail), malformed ones included.

    A good row has its key and its granule, ``>= 0`` since its time is at least ``t0``, and
    no detail. A malformed row has no key, its JSON as detail and a granule of its own below
    0 (``-1 -`` a row id): a group of its own (two alike are two rows), told apart by its
    granule alone; its other columns are null.

    The malformed rows ride along in the one scan of the input and are reported by the
    adapter, instead of being found by a second scan of it. The scan then reads every column
    of the input, for those rows' JSON, even if only the reports are kept.
    """
    original = row_json(df, own_only=False)
    return df.select(
        F.when(good, key.value).alias(_KEY),
        F.when(good, _granule_of(micros, spec))
        .otherwise(F.lit(-1) - F.monotonically_increasing_id()).alias(_GRANULE),
        F.when(~good, original).alias(_DETAIL),
        *[F.when(good, column).alias(name) for name, column in columns.items()])


def _run_cells(cells: DataFrame, factory, inputs: dict[str, Column], shards: int | None,
               project, clock: EventTime, key: Key) -> DataFrame:
    """Run the operator over the cells, each at its granule's end instant (report times
    back in the kind of the user's time, ``clock``, and the ``key`` columns in their own);
    the malformed rows among them are reported with their JSON."""
    job = OperatorJob(factory=factory, inputs=inputs, valid=F.expr(f"{_GRANULE} >= 0"),
                      detail=F.expr(_DETAIL))
    return run_operator(cells, job, time=_END, key=key.travelling_as(_KEY), shards=shards,
                        project=project,
                        times_like=clock)


def _good(valid: Column, micros: Column, key: Key) -> Column:
    return F.coalesce(valid & micros.isNotNull() & ~key.missing, F.lit(False))


def _granule_of(micros: Column, spec: MultiGranularSpec) -> Column:
    """The finest granule of the chain (:meth:`MultiGranularSpec.chain`) holding each time,
    ``ceil((t + shift - t0) / b0)`` in integers (``t`` is in a window, so ``t + shift >= t0``
    and ``div`` truncates = floors)."""
    chain = spec.chain()
    b0 = int(chain.finest_slide)
    return F.call_function("div", micros + F.lit(spec.shift - int(chain.origin) + b0 - 1),
                           F.lit(b0))


def _projection(renamed: dict[str, str] | None = None):
    """The adapter's projection to the reports' columns in order (after the key columns,
    which the adapter puts first), without ``shard``, and with the ``renamed`` columns."""
    renamed = dict(renamed or {})

    def project(columns: dict[str, Column | str]) -> list[Column | str]:
        def column(name: str, value: Column | str) -> Column | str:
            # plain names where possible: a Column built by a pyspark function costs py4j calls
            if not isinstance(value, str):
                return value.alias(renamed.get(name, name))
            return F.expr(f"`{name}` AS `{renamed[name]}`") if name in renamed else name

        return [column(name, value) for name, value in columns.items() if name != SHARD_OUT]

    return project


def _number(col: Column) -> Column:
    """The value as a double, null when it is not a finite number."""
    d = col.try_cast("double")  # 'n/a' is null here, not an error under ANSI mode
    return F.when(~F.isnan(d) & (F.abs(d) != F.lit(float("inf"))), d)

