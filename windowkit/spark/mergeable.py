"""The adapter's mergeable mode: an operator whose bounded-input state is a sum of parts.

An operator that declares a :class:`~windowkit.core.mergeable.MergePlan` (see
:mod:`windowkit.core.mergeable`) runs on a batch DataFrame without a shuffle of rows or a sort,
as one lazy Spark plan:

1. the input's last time, its block and every shard's rows are found in the JVM, by a scalar
   subquery (one code-generated aggregation) that reads only the time, the shard and what
   decides whether a row counts;
2. the rows of the plan's last blocks (the others are filtered out where they are read) are
   turned into one part per (shard, block): with the SQL aggregate the plan names, one
   aggregation by (shard, block) in the JVM; else by the operator's
   :meth:`~windowkit.core.mergeable.MergeableOperator.part`, per (input partition, shard), in
   Python;
3. one operator per shard finishes its parts
   (:meth:`~windowkit.core.mergeable.MergeableOperator.finish_parts`) in Python.

Rows travel only as far as the JVM's aggregation; parts and counts are all that move. Rows
with no time or no key come out as ``rejected = "malformed"`` with the row as JSON, as in
the adapter's other modes.

Spark does not push a filter on a scalar subquery into a Parquet scan (its pushed filters
must be literals), so the second pass reads the row groups before the last blocks too, and
drops their rows before they reach the aggregation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
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
    row_json,
)
from windowkit.spark.event_time import EventTime, event_time

_BLOCK = "wk_block"
_PART = "wk_part"
_LAST = "wk_last"
_ROWS = "wk_rows"
_END = "wk_end"
_PARTS = "wk_parts"
_SITE = "wk_site"
_SLOT = "wk_slot"
_LONG_MIN = -(2**63)
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


def floor_div(column: str, divisor: int) -> str:
    """SQL for ``floor(column / divisor)`` in exact long arithmetic (``div`` truncates).

    Examples
    --------
    >>> spark.sql(f"SELECT {floor_div('x', 3)} FROM VALUES (-4), (4) AS t(x)").collect()
    [Row(...=-2), Row(...=1)]
    """
    return (f"(({column}) div {divisor}) - "
            f"IF(({column}) < 0 AND ({column}) % {divisor} != 0, 1, 0)")


def block_of(column: str, plan: MergePlan) -> Column:
    """The plan's block of a µs time column (by name).

    Examples
    --------
    >>> df = spark.createDataFrame([(-1,), (25_000,)], "t long")
    >>> df.select(block_of("t", MergePlan(1000, 10, 0)).alias("b")).collect()
    [Row(b=-1), Row(b=2)]
    """
    return F.expr(floor_div(floor_div(column, plan.tick), plan.span))


def run_if_mergeable(
    df: DataFrame,
    job: OperatorJob,
    *,
    time: str | Column,
    time_unit: str | None,
    key: str | Column | None,
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
        text = F.lit("") if key is None else (F.col(key) if isinstance(key, str) else key)
        shard = F.pmod(F.hash(text.cast("string")), F.lit(shards))
    schema = job.spark_schema()
    out = run_merged(df, job.factory, plan, schema, job.inputs, time=time,
                     time_unit=time_unit, key=key, shard=shard,
                     original=job.detail if job.detail is not None else row_json(df),
                     valid=job.valid)
    clock = times_like or event_time(df, time, time_unit)
    return out.select(*_output_columns(job, schema, {}, clock, project))


def run_merged(
    df: DataFrame,
    factory: Callable[[], StreamOperator],
    plan: MergePlan,
    schema: T.StructType,
    inputs: dict[str, Column],
    *,
    time: str | Column,
    time_unit: str | None,
    key: str | Column | None,
    shard: Column,
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
    time, time_unit
        The event time (see :mod:`windowkit.spark.event_time`).
    key : str, Column or None
        The operator's key column, None for none.
    shard : Column
        Each row's shard (an int).
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
    micros = event_time(df, time, time_unit).micros()
    key_col = None if key is None else (F.col(key) if isinstance(key, str) else key)
    malformed = micros.isNull()
    if key_col is not None:
        malformed = malformed | key_col.isNull()
    if valid is not None:
        malformed = malformed | ~F.coalesce(valid, F.lit(False))
    rows = df.select(
        shard.cast("int").alias(_SITE), F.when(~malformed, micros).alias(TIME),
        *([key_col.cast("string").alias(KEY)] if key_col is not None else []),
        *[column.alias(name) for name, column in inputs.items()],
        F.when(malformed, original).alias("wk_detail"))
    good = rows.filter(F.col(TIME).isNotNull())
    summary = _summary(good, plan)
    recent = _recent(good, plan, summary)
    if plan.aggregate is not None:
        parts = _aggregated_parts(recent, plan)
    else:
        parts = _python_parts(recent, factory)
    shards = _with_counts(good.sparkSession, summary, parts)
    operator_fields = [f for f in schema.fields
                       if f.name not in (SHARD_OUT, REJECTED, DETAIL_OUT)]
    sent = T.StructType([*operator_fields, T.StructField(SHARD_OUT, T.IntegerType())])
    finished = shards.mapInArrow(functools.partial(_finish_shards, factory, sent), sent)
    out = finished.withColumns({REJECTED: F.lit(None).cast("string"),
                                DETAIL_OUT: F.lit(None).cast("string")})
    malformed_rows = rows.filter(F.col(TIME).isNull()).select(
        *[F.lit(None).cast(f.dataType).alias(f.name) for f in operator_fields],
        F.col(_SITE).alias(SHARD_OUT), F.lit("malformed").alias(REJECTED),
        F.col("wk_detail").alias(DETAIL_OUT))
    return out.unionByName(malformed_rows)


def _summary(good: DataFrame, plan: MergePlan) -> Column:
    """The input's last time, its block and every shard's rows: one scalar subquery, run once
    before the plan's other jobs; it reads only what decides whether a row counts, its time
    and its shard, in a code-generated aggregation."""
    per_shard = good.groupBy(_SITE).agg(F.count(F.lit(1)).alias(_ROWS), F.max(TIME).alias(_END))
    overall = per_shard.agg(F.max(_END).alias(_END),
                            F.collect_list(F.struct(_SITE, _ROWS)).alias(_ROWS))
    return overall.select(F.struct(_END, block_of(_END, plan).alias(_BLOCK), _ROWS)).scalar()


def _recent(good: DataFrame, plan: MergePlan, summary: Column) -> DataFrame:
    """The rows of the last ``lag + 1`` blocks, with their block.

    The subquery is written once, in a projection: an aggregate's arguments may not hold it
    (Spark counts it non-deterministic when the input's positions are), and Spark plans every
    copy of it in an expression on its own (it runs identical ones once).
    """
    ended = good.withColumn(_END, summary.getField(_BLOCK))
    slotted = ended.withColumn(_SLOT, _slot(plan, F.col(_END)))
    return slotted.filter(F.col(_SLOT).isNotNull()).withColumn(
        _BLOCK, F.try_subtract(F.col(_END), F.col(_SLOT))).drop(_END, _SLOT)


def _slot(plan: MergePlan, end_block: Column) -> Column:
    """Each row's block slot: 0 in the last block, up to ``lag``; null before."""
    width = plan.tick * plan.span
    if width > -_LONG_MIN - 1:  # blocks wider than the clock: only numbers tell them apart
        behind = F.try_subtract(end_block, block_of(TIME, plan))
        return F.when(behind <= plan.lag, behind)
    # comparing a time with the blocks' first times costs two comparisons a row where a
    # block number costs divisions; a block whose first time lies below the smallest long
    # starts there
    slot = None
    for lag in range(plan.lag + 1):
        start = F.coalesce(F.try_multiply(F.try_subtract(end_block, F.lit(lag)), F.lit(width)),
                           F.lit(_LONG_MIN))
        slot = (F if slot is None else slot).when(F.col(TIME) >= start, F.lit(lag))
    return slot


def _aggregated_parts(recent: DataFrame, plan: MergePlan) -> DataFrame:
    """The part of every (shard, block) of the last ``lag + 1`` blocks, built by the plan's SQL
    aggregate in the JVM from the rows of that block alone."""
    name, column, arguments = plan.aggregate
    return recent.groupBy(_SITE, _BLOCK).agg(
        F.call_function(name, F.col(column), *[F.lit(a) for a in arguments]).alias(_PART),
        F.max(TIME).alias(_LAST))


def _python_parts(recent: DataFrame, factory: Callable[[], StreamOperator]) -> DataFrame:
    """The parts the operator builds in Python from the rows of the last ``lag + 1`` blocks,
    one per (input partition, shard)."""
    columns = [c for c in recent.columns if c not in ("wk_detail", _BLOCK)]
    return recent.select(*columns).mapInArrow(functools.partial(_build_parts, factory),
                                              _PART_SCHEMA)


def _with_counts(session: SparkSession, summary: Column, parts: DataFrame) -> DataFrame:
    """One row per shard with rows: its rows, the input's last time and its parts (null for a
    shard whose rows all lie before the last blocks)."""
    collected = parts.groupBy(_SITE).agg(
        F.collect_list(F.struct(_BLOCK, _PART, _LAST)).alias(_PARTS))
    # one copy of the subquery (see _recent)
    counts = session.range(1).select(summary.alias(_PARTS)).select(
        F.inline(F.col(_PARTS).getField(_ROWS)), F.col(_PARTS).getField(_END).alias(_END))
    return counts.join(collected, _SITE, "left")


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
    """Each shard's operator finishes its parts; its output rows, with the shard."""
    arrow_schema = _arrow_schema(sent)
    for batch in batches:
        for row in batch.to_pylist():
            parts = [(p[_BLOCK], p[_PART], p[_LAST]) for p in row[_PARTS] or []]
            output = factory().finish_parts(parts, row[_ROWS], row[_END])
            columns = [pa.array(np.full(len(output), row[_SITE], dtype=np.int32))
                       if f.name == SHARD_OUT else pa.Array.from_pandas(output[f.name], type=f.type)
                       for f in arrow_schema]
            yield pa.RecordBatch.from_arrays(columns, schema=arrow_schema)

