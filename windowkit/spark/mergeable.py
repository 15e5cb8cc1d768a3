"""The adapter's mergeable mode: an operator whose bounded-input state is a sum of parts.

An operator that declares a :class:`~windowkit.core.mergeable.MergePlan` (see
:mod:`windowkit.core.mergeable`) runs on a batch DataFrame without a shuffle of rows or a sort,
as one lazy Spark plan:

1. the input's last time, its block and every shard's rows (the summary) are found in the
   JVM, by one code-generated aggregation that reads only the time, the shard and what decides
   whether a row counts;
2. the rows of the plan's last blocks (the others are filtered out where they are read) are
   turned into one part per (shard, block): with the SQL aggregate the plan names, one
   aggregation by (shard, block) in the JVM; else by the operator's
   :meth:`~windowkit.core.mergeable.MergeableOperator.part`, per (input partition, shard), in
   Python;
3. one task gathers the parts (a few per shard, however many rows) and the summary's row, and
   one operator per shard finishes its parts
   (:meth:`~windowkit.core.mergeable.MergeableOperator.finish_parts`) in Python.

Rows travel only as far as the JVM's aggregation; parts and counts are all that move. Rows
with no time or no key come out as ``rejected = "malformed"`` with the row as JSON, as in
the adapter's other modes.

The second pass keeps the rows from the last blocks' first time on by comparing a column with
a scalar subquery of the summary. Where the time column can be compared as it is (an integer
with a unit, or a timestamp), that column: Spark pushes the comparison into a Parquet scan, and
the row groups before the last blocks are skipped where they are read, with no Spark action
before the user's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.mergeable import MergeableOperator, MergePlan
from windowkit.core.operator import KEY, TIME, StreamOperator
from windowkit.spark.adapter import (
    DETAIL_OUT,
    REJECTED,
    SHARD_OUT,
    OperatorJob,
    _arrow_schema,
    _output_columns,
    keyed_output,
    row_json,
)
from windowkit.spark.event_time import EventTime, event_time, floor_div_sql
from windowkit.spark.keys import Key

_BLOCK = "wk_block"
_PART = "wk_part"
_LAST = "wk_last"
_ROWS = "wk_rows"
_END = "wk_end"
_SITE = "wk_site"
_SUMMARY = "wk_summary"
_DETAIL = "wk_detail"
_RAW = "wk_raw_time"
_LONG_MIN = -(2**63)
#: Up to this many shards, the summary counts each shard's rows by a condition in one global
#: aggregation; beyond, by a group by shard (a plan of thousands of conditions is slow to build).
_COUNTED_BY_CONDITION = 64
_PART_SCHEMA = T.StructType([T.StructField(_SITE, T.IntegerType()),
                             T.StructField(_BLOCK, T.LongType()),
                             T.StructField(_PART, T.BinaryType()),
                             T.StructField(_LAST, T.LongType())])


def merge_plan_of(operator: StreamOperator) -> MergePlan | None:
    """The plan ``operator`` declares, None if it does not merge.

    Examples
    --------
    >>> from windowkit.core.sketches import SimpleWindowCM
    >>> from windowkit.core.sketches.operator import WindowedCountMinOperator
    >>> def simple(unit):
    ...     return SimpleWindowCM(5, depth=1, width=8, unit=unit)
    >>> merge_plan_of(WindowedCountMinOperator(simple("ticks"), tick_micros=10)).span
    5
    >>> merge_plan_of(WindowedCountMinOperator(simple("samples"))) is None
    True
    """
    return operator.merge_plan() if isinstance(operator, MergeableOperator) else None


def block_of(column: str, plan: MergePlan) -> str:
    """SQL for the plan's block of a µs time (``column`` is SQL text, e.g. a name).

    Examples
    --------
    >>> block = block_of("t", MergePlan(1000, 10, 0))
    >>> spark.sql(f"SELECT {block} AS b FROM VALUES (-1), (25000) AS v(t)").collect()
    [Row(b=-1), Row(b=2)]
    """
    width = _block_width(plan)
    if width is not None:  # floor(floor(t / a) / b) is floor(t / (a b))
        return floor_div_sql(column, width)
    return floor_div_sql(floor_div_sql(column, plan.tick), plan.span)


def _block_width(plan: MergePlan) -> int | None:
    """A block's µs, None where they do not fit a long (a block wider than the clock)."""
    width = plan.tick * plan.span
    return width if width <= -_LONG_MIN - 1 else None


def run_if_mergeable(
    df: DataFrame,
    job: OperatorJob,
    *,
    time: str | Column,
    time_unit: str | None,
    key: Key,
    shards: int,
    shard: Column | None,
    project: Callable[[dict[str, Column | str]], list[Column | str]] | None,
    times_like: EventTime | None = None,
) -> DataFrame | None:
    """:func:`~windowkit.spark.adapter.run_operator` of a batch job whose operator declares
    a merge plan, in this mode; None if it declares none (the adapter then runs it as any
    other). The arguments are :func:`~windowkit.spark.adapter.run_operator`'s.
    """
    plan = merge_plan_of(job.declared)
    if plan is None:
        return None
    if shard is None:
        shard = F.pmod(F.hash(key.value.cast("string")), F.lit(shards))
    schema = job.spark_schema()
    clock = event_time(df, time, time_unit)
    out = run_merged(df, job.factory, plan, schema, job.inputs, clock=clock, key=key,
                     shard=shard, shards=shards,
                     original=job.detail if job.detail is not None else row_json(df),
                     valid=job.valid)
    return keyed_output(out, key, _output_columns(job, schema, {}, times_like or clock,
                                                  project, key))


def run_merged(
    df: DataFrame,
    factory: Callable[[], StreamOperator],
    plan: MergePlan,
    schema: T.StructType,
    inputs: dict[str, Column],
    *,
    clock: EventTime,
    key: Key,
    shard: Column,
    shards: int,
    original: Column,
    valid: Column | None = None,
) -> DataFrame:
    """Run a mergeable operator over a batch DataFrame (see the module docstring).

    Parameters
    ----------
    df : DataFrame
        The input (batch).
    factory : callable
        Builds a fresh operator (picklable).
    plan : MergePlan
        The operators' declared plan.
    schema : StructType
        The output: the operator's columns (times as µs longs), ``shard``, ``rejected`` and
        ``detail``.
    inputs : dict of str to Column
        The operator's input columns besides ``time`` (and ``key``).
    clock : EventTime
        The event time (see :mod:`windowkit.spark.event_time`).
    key : Key
        The operator's key (see :mod:`windowkit.spark.keys`).
    shard : Column
        Each row's shard (an int).
    shards : int
        The shards: ``shard`` lies in ``[0, shards)``.
    original : Column
        A malformed row's JSON.
    valid : Column, optional
        False for rows that cannot be processed.

    Returns
    -------
    DataFrame
        ``schema``'s columns, times as µs; rejected rows have only ``shard``, ``rejected`` and
        ``detail``.
    """
    micros = clock.micros()
    malformed = micros.isNull() | key.missing
    if valid is not None:
        malformed = malformed | ~F.coalesce(valid, F.lit(False))
    rows = df.select(
        shard.cast("int").alias(_SITE), F.when(~malformed, micros).alias(TIME),
        *([key.value.cast("string").alias(KEY)] if KEY in schema.names else []),
        *[column.alias(name) for name, column in inputs.items()],
        F.when(malformed, original).alias(_DETAIL),
        # the time column as it is: a filter on it reaches the file scan
        *([clock.column.alias(_RAW)] if clock.comparable else []))
    good = rows.filter(f"`{TIME}` IS NOT NULL")
    summary = _summary(good, plan, shards)
    recent = _recent(good, plan, summary, clock)
    # Parts are few (shards x blocks): one task gathers them with the summary row and
    # finishes every shard, where a shuffle by shard and a join with the counts cost a stage
    # each. (The summary's row is read from the aggregation the scan's filter ran.)
    aggregated = plan.aggregate is not None
    parts = _aggregated_parts(recent, plan) if aggregated else _python_parts(recent, factory)
    gathered = parts.unionByName(summary, allowMissingColumns=True)
    # JVM parts reach the task from their aggregation's shuffle. Python parts are built where
    # the rows are read and need a shuffle of their own: a coalesce would pull the scan and
    # the building into the one task, and a plan reading the output twice (heavy_hitters)
    # would build them twice, where it reuses a shuffle.
    gathered = gathered.coalesce(1) if aggregated else gathered.repartition(1)
    operator_fields = [f for f in schema.fields
                       if f.name not in (SHARD_OUT, REJECTED, DETAIL_OUT)]
    sent = T.StructType([*operator_fields, T.StructField(SHARD_OUT, T.IntegerType()),
                         T.StructField(REJECTED, T.StringType()),
                         T.StructField(DETAIL_OUT, T.StringType())])
    finished = gathered.mapInArrow(
        functools.partial(_finish_shards, factory, sent), sent)
    malformed_rows = rows.filter(f"`{TIME}` IS NULL").select(
        F.col(_SITE).alias(SHARD_OUT), F.lit("malformed").alias(REJECTED),
        F.col(_DETAIL).alias(DETAIL_OUT))
    # the JVM fills the operator's columns with nulls
    return finished.unionByName(malformed_rows, allowMissingColumns=True)


def _summary(good: DataFrame, plan: MergePlan, shards: int) -> DataFrame:
    """One row, ``wk_summary``: the input's last time, its block and every shard's rows. It
    reads only what decides whether a row counts, its time and its shard, in a code-generated
    aggregation that runs once, before the plan's other jobs: for the second pass's scalar
    subquery, and again read from its exchange for the finishing task's row."""
    # SQL text: one expression costs one call to the JVM, where pyspark's functions cost one
    # or more each
    if shards <= _COUNTED_BY_CONDITION:
        # one global aggregation of conditional counts: no shuffle by shard, no second stage
        totals, last = good, f"max(`{TIME}`)"
        counts = ", ".join(f"struct({s} AS {_SITE}, count_if({_SITE} = {s}) AS {_ROWS})"
                           for s in range(shards))
        per_shard = f"filter(array({counts}), c -> c.{_ROWS} > 0)"
    else:
        totals = good.groupBy(_SITE).agg(F.expr(f"count(1) AS {_ROWS}"),
                                         F.expr(f"max(`{TIME}`) AS {_END}"))
        last, per_shard = f"max({_END})", f"collect_list(struct({_SITE}, {_ROWS}))"
    return totals.agg(F.expr(
        f"struct({last} AS {_END}, {block_of(last, plan)} AS {_BLOCK}, "
        f"{per_shard} AS {_ROWS}) AS {_SUMMARY}"))


def _recent(good: DataFrame, plan: MergePlan, summary: DataFrame,
            clock: EventTime) -> DataFrame:
    """The rows of the last ``lag + 1`` blocks, with their block.

    The rows are kept from the last blocks' first time on by a filter that compares a column
    with a scalar subquery of ``summary`` (the one-row summary): where the time column can be
    compared as it is, that column, so that Spark pushes the filter into a Parquet scan (it
    skips the row groups before). Spark optimizes every copy of a subquery on its own, so
    there is one copy here, and a row's block is then found from its time alone.
    """
    width = _block_width(plan)
    if width is None:
        # blocks wider than the clock: the last ones are told apart by their numbers only
        end = summary.select(F.col(_SUMMARY).getField(_BLOCK)).scalar()
        return _with_block(good, plan).filter(F.col(_BLOCK) >= end - F.lit(plan.lag))
    first_block = F.try_subtract(F.col(_SUMMARY).getField(_BLOCK), F.lit(plan.lag))
    start = F.coalesce(F.try_multiply(first_block, F.lit(width)), F.lit(_LONG_MIN))
    # With no row counted, no first time and no recent row. The filter reads every field of the
    # summary, so that Spark keeps its aggregation whole (not pruned to the last time) and the
    # finishing task's row reuses it; and no scan filters by a field of a struct, into which
    # Spark would otherwise merge this subquery with others of the same aggregation.
    counted = summary.filter(f"{_SUMMARY}.{_END} IS NOT NULL AND size({_SUMMARY}.{_ROWS}) > 0")
    if clock.first_value_exact:
        recent = good.filter(F.col(_RAW) >= counted.select(clock.first_value(start)).scalar())
    else:
        recent = good.filter(F.col(TIME) >= counted.select(start).scalar())
    # from the first block's start on, every row's block is one of the last ones
    return _with_block(recent, plan)


def _with_block(rows: DataFrame, plan: MergePlan) -> DataFrame:
    """``rows``' columns a part is built from, and each row's block."""
    kept = [c for c in rows.columns if c not in (_DETAIL, _RAW)]
    return rows.select(*kept, F.expr(block_of(f"`{TIME}`", plan)).alias(_BLOCK))


def _aggregated_parts(recent: DataFrame, plan: MergePlan) -> DataFrame:
    """The part of every (shard, block) of the last ``lag + 1`` blocks, built by the plan's SQL
    aggregate in the JVM from the rows of that block alone."""
    name, column, arguments = plan.aggregate
    call = ", ".join([f"`{column}`", *[_sql_literal(a) for a in arguments]])
    return recent.groupBy(_SITE, _BLOCK).agg(F.expr(f"{name}({call}) AS {_PART}"),
                                             F.expr(f"max(`{TIME}`) AS {_LAST}"))


def _sql_literal(value: float | int) -> str:
    """A SQL literal of ``value``'s type (a bare ``0.1`` is a decimal in Spark SQL).

    Examples
    --------
    >>> _sql_literal(0.25), _sql_literal(1e-05), _sql_literal(7)
    ('0.25D', '1e-05D', '7')
    """
    return f"{value!r}D" if isinstance(value, float) else str(int(value))


def _python_parts(recent: DataFrame, factory: Callable[[], StreamOperator]) -> DataFrame:
    """The parts the operator builds in Python from the rows of the last ``lag + 1`` blocks,
    one per (input partition, shard)."""
    columns = [c for c in recent.columns if c != _BLOCK]
    return recent.select(*columns).mapInArrow(functools.partial(_build_parts, factory),
                                              _PART_SCHEMA)


def _build_parts(factory: Callable[[], StreamOperator],
                 batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One part per shard present in this input partition."""
    batches = [b for b in batches if b.num_rows]
    if not batches:
        return
    table = pa.Table.from_batches(batches)
    sites = table.column(_SITE).to_numpy()
    frame = table.drop_columns([_SITE]).to_pandas()
    present = np.unique(sites).tolist()
    out: dict[str, list] = {f.name: [] for f in _PART_SCHEMA.fields}
    for site in present:
        mine = frame if len(present) == 1 else frame[sites == site]
        operator = factory()
        out[_SITE].append(site)
        out[_BLOCK].append(None)
        out[_PART].append(operator.part(mine))
        out[_LAST].append(int(mine[TIME].max()))
    arrow_schema = pa.schema([(_SITE, pa.int32()), (_BLOCK, pa.int64()),
                              (_PART, pa.binary()), (_LAST, pa.int64())])
    yield pa.RecordBatch.from_pydict(out, schema=arrow_schema)


def _finish_shards(factory: Callable[[], StreamOperator], sent: T.StructType,
                   batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Every shard with rows finishes its parts (none if its rows all lie before the last
    blocks); its output rows, with the shard. The parts of every shard and the input's
    summary (a row of its own) are this partition's rows."""
    rows = [row for batch in batches for row in batch.to_pylist()]
    summary = next(row[_SUMMARY] for row in rows if row[_SUMMARY] is not None)
    parts: dict[int, list] = {}
    for row in rows:
        if row[_SUMMARY] is None:
            parts.setdefault(row[_SITE], []).append((row[_BLOCK], row[_PART], row[_LAST]))
    arrow_schema = _arrow_schema(sent)
    for count in sorted(summary[_ROWS], key=lambda c: c[_SITE]):
        site = count[_SITE]
        output = factory().finish_parts(parts.get(site, []), count[_ROWS], summary[_END])
        columns = [pa.array(np.full(len(output), site, dtype=np.int32)) if f.name == SHARD_OUT
                   else pa.nulls(len(output), f.type) if f.name in (REJECTED, DETAIL_OUT)
                   else pa.Array.from_pandas(output[f.name], type=f.type)
                   for f in arrow_schema]
        yield pa.RecordBatch.from_arrays(columns, schema=arrow_schema)
