"""The one generic Spark adapter: run any core :class:`StreamOperator` on a DataFrame.

Keys are hashed in the JVM into a fixed number of *shards* (Spark's hash of the key modulo
``shards``: the partition ``repartition(shards, key)`` gives, or an explicit shard column); each
shard is one Spark group and one operator instance holding the state of many keys, so
per-group Python overhead is paid per shard, not per key. Each shard's operator sits behind an
:class:`~windowkit.core.operator.EventTimeRunner`, which orders rows by event time, applies the
watermark and counts late rows.

* Batch DataFrames: each input task packs its rows into one Arrow IPC blob per shard where it
  reads them; the blobs are repartitioned by shard, and a ``mapInArrow`` task per shard (no JVM
  sort or grouping) feeds the shard's rows to its runner as one batch, then ``finish()`` (the
  input has ended).
* Batch DataFrames whose operator declares that its state is a sum of parts (a merge plan,
  :mod:`windowkit.core.mergeable`): the mergeable mode of :mod:`windowkit.spark.mergeable`,
  parts built where the rows are read, merged per shard by Spark, then finished.
* Streaming DataFrames: each task packs its rows into one Arrow IPC blob per shard where it
  reads them, then ``groupBy(shard).transformWithStateInPandas`` in event-time mode; the
  runner's bytes live in one ValueState per shard and one event-time timer per shard fires when
  the watermark will release buffered rows or settle output (the paper's punctuation).

Spark computes each micro-batch's watermark from the event times of the batches before it, so
a shard knows a bound the next watermark cannot fall below; rows behind that bound are released
to the operator at once instead of waiting in state for one more micro-batch (same output,
sooner).

Rows that cannot be processed are never dropped: a row whose event time or key is null (or the
time unparsable, or beyond 2**61 µs from 1970 when the job folds a code into it), or that the
job marks invalid, comes out with ``rejected = "malformed"``, and a row behind the watermark
with ``rejected = "late"``; ``detail`` holds the row as JSON. Normal output rows have
``rejected`` null.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import functools
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.durations import to_micros
from windowkit.core.operator import INPUT_END, KEY, TIME, EventTimeRunner, StreamOperator
from windowkit.core.validation import check_int
from windowkit.spark.event_time import (
    NO_WATERMARK_METADATA,
    EventTime,
    check_watermarkable,
    event_time,
    watermarked,
)
from windowkit.spark.keys import Key, KeyLike, resolve_key
from windowkit.spark.kill_hooks import wait_to_be_killed
from windowkit.spark.processor import ORIGINAL_PREFIX
from windowkit.spark.processor import RunnerProcessor as _RunnerProcessor
from windowkit.spark.session import ensure_stateful_conf, is_connect, local_cores

SHARD = "wk_shard"  # no leading "__": TWS renames such columns positionally
SHARD_OUT = "shard"
EVENT_TIME = "wk_event_time"
REJECTED = "rejected"
DETAIL_OUT = "detail"
PAYLOAD = "wk_rows"
DETAIL_IN = "wk_detail"  # a malformed row's JSON beside an integer key (INTEGER_KEYS)
# A folded code takes the two low bits of the time: event times must stay within 2**61 µs
# (about 73,000 years) of 1970 so that the folded value fits in an int64.
FOLD_BITS = 2
FOLD_LIMIT = 2 ** (63 - FOLD_BITS) - 1
# The folded code of a flagged row (a null "code" input, see OperatorJob): one more than the
# largest value.
FLAGGED_CODE = (1 << FOLD_BITS) - 1
FLAG_SEPARATOR = "\x00"
#: Columns whose names start with this are windowkit's own, never part of a rejected row's JSON.
INTERNAL_PREFIX = "wk_"
PACKED_SCHEMA = T.StructType([T.StructField(SHARD, T.IntegerType(), True),
                              T.StructField(PAYLOAD, T.BinaryType(), True)])
# Packed rows are zstd-compressed Arrow IPC: the JVM copies, shuffles and hands to Python every
# byte of a payload, and the keys, categories and times of a stream compress several fold, far
# faster than the JVM moves them (multi-granular stream, 1 M rows per micro-batch: 1.38-1.48 s
# -> 1.05-1.14 s a micro-batch; LZ4 1.20-1.30 s).
PACKED_IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")

_SPARK_TYPES = {
    "int64": T.LongType(),
    "float64": T.DoubleType(),
    "bool": T.BooleanType(),
    "string": T.StringType(),
    "timestamp": T.LongType(),  # int64 µs from Python; converted to TimestampType in the JVM
    "duration": T.LongType(),  # int64 µs from Python; a day-time interval in the JVM
    "binary": T.BinaryType(),
}


@dataclass(frozen=True)
class OperatorJob:
    """What the adapter needs to run an operator: the operator, and where its inputs come from.

    How each input travels, which outputs Spark derives and how rows are routed to shards
    follow from what the operator declares (see :class:`~windowkit.core.operator.
    StreamOperator`): its ``output_schema``, its ``input_schema`` (a ``"code"`` input travels
    in the two low bits of the event time rather than in a column of its own, because the
    JVM's Arrow writer pays per column and row; ``"category"`` inputs reach it as pandas
    Categoricals), ``INTEGER_KEYS`` (on a batch, an integer key travels as a long, not as
    text), ``derived_outputs`` (on a batch, computed in the JVM from the others rather than
    sent from Python), ``route`` and ``ends_with_input`` (on a batch, every row carries the
    input's last time, from a scalar subquery).

    A ``"code"`` input's -1 is an unknown value the operator counts; a null there is a row
    that is reported as malformed (with the row as JSON in ``detail``) *and* still given to
    the operator, as -1. Such a row travels with the code 3 and ``key + NUL + JSON`` in the
    key column, so the common rows pay nothing for it.

    Parameters
    ----------
    factory : callable
        Builds a fresh operator (must be picklable: a class or ``functools.partial``). It is
        called once on the driver to read the operator's declarations.
    inputs : dict of str to Column
        Columns to send to the operator besides ``key`` and ``time``, as Spark expressions.
    valid : Column, optional
        False for rows that cannot be processed (they come out as ``malformed``).
    detail : Column, optional
        The text a malformed (or flagged) row is reported with, never null for such a row;
        default: the row's columns as JSON. A job whose input is already derived from the
        user's rows (e.g. pre-aggregated cells) carries their JSON itself. Late rows of a
        stream are reported with the user's row as it arrived, whatever this is.
    """

    factory: Callable[[], StreamOperator]
    inputs: dict[str, Column]
    valid: Column | None = None
    detail: Column | None = None

    @functools.cached_property
    def declared(self) -> StreamOperator:
        """An operator made by ``factory``, whose declarations the adapter reads."""
        return self.factory()

    @property
    def schema(self) -> list[tuple[str, str]]:
        """The operator's output schema."""
        return self.declared.output_schema

    @functools.cached_property
    def folded(self) -> str | None:
        """The input that travels in the event time's low bits: the first ``"code"`` one."""
        types = dict(self.declared.input_schema)
        return next((name for name in self.inputs if types.get(name) == "code"), None)

    @functools.cached_property
    def categorical(self) -> tuple[str, ...]:
        """The inputs the operator takes as Categoricals."""
        types = dict(self.declared.input_schema)
        return tuple(name for name in self.inputs if types.get(name) == "category")

    def shipped(self) -> list[str]:
        """The inputs that travel as columns of their own."""
        return [name for name in self.inputs if name != self.folded]

    def spark_schema(self, left_out: tuple[str, ...] = (), typed_key: bool = False
                     ) -> T.StructType:
        """The output rows' Spark schema: the operator's columns, ``shard``, ``rejected`` and
        ``detail``, without ``left_out``; ``typed_key``: the key is a long."""
        fields = [T.StructField(n, T.LongType() if typed_key and n == KEY else _SPARK_TYPES[t],
                                True) for n, t in self.schema]
        fields += [T.StructField(SHARD_OUT, T.IntegerType(), True),
                   T.StructField(REJECTED, T.StringType(), True),
                   T.StructField(DETAIL_OUT, T.StringType(), True)]
        return T.StructType([f for f in fields if f.name not in left_out])


def default_shards(df: DataFrame) -> int:
    """The number of shards when the caller gives none: one per core of the application
    (Spark's default parallelism) on a batch DataFrame, ``spark.sql.shuffle.partitions`` on a
    stream, whose state is laid out by it for the life of its checkpoint.

    Results never depend on it; on a batch, Spark's default of 200 partitions costs 200
    Python tasks however small the job: the small network-day demo took 195 s on a 2-core
    standalone cluster with 200 shards, 67 s with 2.

    Examples
    --------
    >>> default_shards(spark.range(3)) == spark.sparkContext.defaultParallelism
    True
    >>> stream = spark.readStream.format("rate").load()
    >>> default_shards(stream) == int(spark.conf.get("spark.sql.shuffle.partitions"))
    True

    A Connect session reads ``spark.default.parallelism``, else the cores of a ``local[N]``
    master, else ``spark.sql.shuffle.partitions``.
    """
    spark = df.sparkSession
    if df.isStreaming:
        return int(spark.conf.get("spark.sql.shuffle.partitions"))
    if not is_connect(spark):
        return max(1, int(spark.sparkContext.defaultParallelism))
    # A Connect client cannot ask the server's scheduler; its settings tell the same where set
    parallelism = spark.conf.get("spark.default.parallelism", None)
    if parallelism is None:
        master = spark.conf.get("spark.master", "")
        parallelism = local_cores(master) if master.startswith("local") else None
    return max(1, int(parallelism or spark.conf.get("spark.sql.shuffle.partitions")))


def run_operator(
    df: DataFrame,
    job: OperatorJob,
    *,
    time: str | Column,
    key: KeyLike | Key,
    shards: int | None = None,
    late: str | None = None,
    shard: Column | None = None,
    time_unit: str | None = None,
    project: Callable[[dict[str, Column | str]], list[Column | str]] | None = None,
    times_like: EventTime | None = None,
) -> DataFrame:
    """Run ``job``'s operator over ``df`` on batch or streaming DataFrames alike.

    Parameters
    ----------
    df : DataFrame
        The input (``df.isStreaming`` selects the engine).
    job : OperatorJob
        The operator and its input columns.
    time : str or Column
        Event time: a timestamp, ``timestamp_ntz``, date, timestamp string, or an integer
        with ``time_unit`` (see :mod:`windowkit.spark.event_time`).
    key : str, Column, list of them, Key or None
        Grouping key (see :mod:`windowkit.spark.keys`: a single key column is cast to text for
        transport, or on a batch to a long for an operator declaring ``INTEGER_KEYS``; a
        composite key travels as JSON text; a null in a key column makes the row malformed);
        None for one global key. An operator that routes by an input of its own (its
        ``route``) takes none. The output's key columns come first, each under its own name
        and type (``key``, the empty text, for the global key).
    shards : int, optional
        Spark groups the keys are hashed into; default :func:`default_shards` (one per core
        on a batch, ``spark.sql.shuffle.partitions`` on a stream).
        Keep it fixed for the life of a streaming checkpoint.
    late : str, optional
        Streaming only: watermark delay, e.g. ``"1 minute"``; rows older than the watermark
        are reported as late. A stream that has a watermark already (a windowkit output, or
        the user's ``withWatermark``) keeps it and this is not used: Spark refuses a second
        one after a stateful step. Its rows are then late when behind the previous
        micro-batch's watermark, as Spark's own stateful steps judge them.
    shard : Column, optional
        An explicit shard per row, an integer in ``[0, shards)`` (e.g. a DistCM site);
        without it rows are spread by the hash of the operator's ``route`` column (a null
        value there makes the row malformed).
    time_unit : {"s", "ms", "us", "ns"}, optional
        The unit of an integer ``time`` column (required for one, refused for any other).
    project : callable, optional
        Given the returned columns by name (a Column, or the name itself where the output
        column is returned as it is), the columns of the result instead: the caller's own
        projection, made in the adapter's (each DataFrame call is an analysis in the JVM).
    times_like : EventTime, optional
        The time column whose kind the output's ``timestamp`` columns come back in, when
        ``time`` is one the caller derived from it (default: ``time``'s own).

    Returns
    -------
    DataFrame
        The operator's columns (``timestamp`` columns in the kind of ``time``: timestamps,
        ``timestamp_ntz``, or integers in ``time_unit``) plus ``shard`` (the
        shard that produced the row), ``rejected`` and ``detail``; or ``project``'s columns.
        On a stream whose times are instants, the operator's ``event_time_output`` carries
        the result's watermark, for the stateful steps after it.
        On a batch, the operator's ``derived_outputs`` and ``shard`` are computed in the JVM,
        not sent from Python: each column Python sends costs the JVM per row.
    """
    if shards is None:
        shards = default_shards(df)
    shards = check_int("shards", shards, 1)
    if not isinstance(key, Key):
        key = resolve_key(df, key)
    if not df.isStreaming:
        # an operator that declares a merge plan runs in the mergeable mode (a module beside
        # this one, which imports it)
        from windowkit.spark.mergeable import run_if_mergeable

        merged = run_if_mergeable(df, job, time=time, time_unit=time_unit, key=key,
                                  shards=shards, shard=shard, project=project,
                                  times_like=times_like)
        if merged is not None:
            return merged
    explicit_shard = shard is not None
    route = job.declared.route
    if route != KEY and route not in job.inputs:
        msg = (f"the operator routes by {route!r}, which must be 'key' or one of the job's "
               f"inputs {list(job.inputs)}")
        raise ValueError(msg)
    if route == job.folded:
        # a folded input has no column of its own to hash, and its four codes would fill at
        # most four shards anyway
        msg = f"the operator must not route by its code input {route!r}; route by 'key' instead"
        raise ValueError(msg)
    clock = event_time(df, time, time_unit)
    micros = clock.micros()
    # a row with no key (or no routing value) belongs to no key's state and to no shard
    malformed = micros.isNull() | key.missing
    if route != KEY:
        malformed = malformed | job.inputs[route].isNull()
    if job.valid is not None:
        malformed = malformed | ~F.coalesce(job.valid, F.lit(False))
    shipped_time = micros
    original = job.detail if job.detail is not None else row_json(df)
    typed_key = (job.declared.INTEGER_KEYS and not df.isStreaming and key.integral
                 and job.folded is None and route == KEY and not explicit_shard)
    key_text = key.value.cast("long" if typed_key else "string")
    if job.folded is not None:
        # a time too far out to fold is not a real event time
        malformed = malformed | ~micros.between(-FOLD_LIMIT, FOLD_LIMIT)
        value = job.inputs[job.folded]
        flagged = value.isNull() & ~malformed
        code = F.when(flagged, F.lit(FLAGGED_CODE)).otherwise(value.cast("long") + 1)
        key_text = F.when(flagged, F.concat(key_text, F.lit(FLAG_SEPARATOR), original)
                          ).otherwise(key_text)
        shipped_time = micros * (1 << FOLD_BITS) + code
    if not df.isStreaming and job.declared.ends_with_input:
        # the input's last time, from a scalar subquery of the same plan, in every row: a
        # lazy plan's tasks learn a value computed over all rows no other way
        end = df.select(F.when(~malformed, micros).alias(INPUT_END)).agg(
            F.max(INPUT_END)).scalar()
        job = replace(job, inputs={**job.inputs, INPUT_END: end})
    # Every column shipped to Python costs JVM time per row, so a malformed row has no column
    # of its own: its time is null and its key column carries the row as JSON.
    # Lateness is known only in the stateful step, so a streaming row's own columns travel
    # there, in Arrow beside the shipped ones: JSON for every row would cost the JVM four
    # times as much, and only the rare late rows are turned into JSON.
    own = _own_columns(df) if df.isStreaming else {}
    carried = _carriers(own, job)
    key_value = (F.when(~malformed, key_text) if typed_key
                 else F.when(malformed, original).otherwise(key_text))
    # A key that is one of the stream's own text or integer columns already travels as that
    # column (for late rows' JSON): its text is made from it in the stateful step, and the key
    # column carries only malformed rows' JSON (Arrow's text of an integer is Spark's).
    key_carrier = (carried[key.plain] if key.plain in own
                   and job.folded is None and route == KEY and not explicit_shard
                   and isinstance(df.schema[key.plain].dataType, _KEY_CARRIER_TYPES) else None)
    if explicit_shard:
        leading = [shard.cast("int").alias(SHARD)]
    else:
        # A row keyed by its carrier is routed by its key column; a flagged one (whose key
        # column holds more than its key) by its key's text. The shard (and a stream's
        # watermark, below) come from this one projection: any projection after it would copy
        # every row once more in the JVM.
        routed = (key_value if key_carrier
                  else key.value.cast("string") if route == KEY and job.folded is not None
                  else key_value if route == KEY else job.inputs[route])
        leading = [F.pmod(F.hash(routed), F.lit(shards)).alias(SHARD)]
    # A stream that has a watermark already (the user's, or a windowkit output's) keeps it:
    # Spark refuses a second definition after a stateful step. Otherwise the user's own
    # timestamp column travels anyway (for late rows' JSON): its watermark is the one the
    # event time gives, without a third copy of the time.
    upstream = watermarked(df)
    if upstream is None:
        check_watermarkable(df, "df")
    watermark_on = (None if upstream is not None
                    else carried[time] if isinstance(time, str) and time in own
                    and isinstance(df.schema[time].dataType, T.TimestampType) else EVENT_TIME)
    prepared = df.select(
        *leading,
        (F.when(malformed, original) if key_carrier else key_value).alias(KEY),
        F.when(~malformed, shipped_time).alias(TIME),
        *[job.inputs[name].alias(name) for name in job.shipped()],
        *([F.when(malformed, original).alias(DETAIL_IN)] if typed_key else []),
        *([F.timestamp_micros(micros).alias(EVENT_TIME)]
          if df.isStreaming and watermark_on == EVENT_TIME else []),
        *[column.alias(carried[name]) for name, column in own.items()
          if carried[name].startswith(ORIGINAL_PREFIX)],
    )
    derived = {} if df.isStreaming else job.declared.derived_outputs
    schema = job.spark_schema(() if df.isStreaming else (*derived, SHARD_OUT), typed_key)
    out_clock = times_like or clock
    event_output = _event_time_output(job, df, out_clock)
    if event_output is not None:
        schema = T.StructType([T.StructField(f.name, T.TimestampType(), True)
                               if f.name == event_output else f for f in schema.fields])
    if df.isStreaming:
        ensure_stateful_conf(df.sparkSession)
        # (an event-time column of its own is dropped where the rows are packed)
        if watermark_on is not None:
            prepared = prepared.withWatermark(watermark_on, late or "0 seconds")
        # transformWithStateInPandas turns its input into pandas row by row (itertuples in
        # pyspark 4.1), about 0.4 M rows/s per core: so each task's input batch of one shard
        # travels as one row holding the rows as Arrow IPC bytes. Packing where the rows are
        # read spares a shuffle of every row and a stage per micro-batch; the shard is the
        # partition `repartition(shards, route)` would give (Spark's hash, modulo shards), and
        # the watermark, defined above on the rows themselves, is unchanged by the packing.
        group_ids = spread_group_ids(shards)
        packed = prepared.mapInArrow(
            functools.partial(_pack_rows, group_ids, watermark_on == EVENT_TIME,
                              coded=_coded_columns(job, key_carrier)), PACKED_SCHEMA)
        out = packed.groupBy(SHARD).transformWithStateInPandas(
            statefulProcessor=_RunnerProcessor(job.factory, job.shipped(),
                                               job.folded, _own_watermark_delay(df, late),
                                               group_ids, list(carried.items()),
                                               job.categorical,
                                               key_carrier, event_output,
                                               upstream is not None),
            outputStructType=schema,
            outputMode="Append",
            timeMode="EventTime",
            # the output's watermark, for a stateful step downstream (another windowkit
            # function, a join, a windowed aggregation)
            eventTimeColumnName=event_output or "",
        )
    else:
        # A bounded input needs no grouping or sort in the JVM: each task streams its shard's
        # rows through the shard's runner, then ends the input. The rows travel packed, as a
        # stream's do: one row per (input batch, shard) holding its rows as compressed Arrow,
        # so the JVM shuffles a few blobs instead of serializing, sorting and reading back
        # every row (threshold frames, 10 M rows: 3.9 s -> 2.7 s). Each shard's blobs meet in
        # a task of its own, the shard's partition (see spread_group_ids).
        group_ids = spread_group_ids(shards)
        packed = prepared.mapInArrow(
            functools.partial(_pack_rows, group_ids, False, coded=_coded_columns(job)),
            PACKED_SCHEMA)
        partitioned = packed.repartition(shards, SHARD)
        # A batch's rejected rows are all malformed, and they alone have a detail: the label
        # is made in the JVM below, not sent from Python as a column of every row.
        sent = T.StructType([field for field in schema.fields if field.name != REJECTED])
        # Arrow batches, not pandas: the key column goes to the operator as dictionary codes
        # (a Categorical) instead of millions of Python strings.
        out = partitioned.mapInArrow(
            functools.partial(_run_partition, job.factory, job.shipped(), job.folded,
                              sent, job.categorical),
            sent)
    returned = sent if not df.isStreaming else schema
    return keyed_output(out, key, _output_columns(
        job, returned, derived, out_clock, project, key, event_output,
        df.isStreaming and event_output is None))


def keyed_output(out: DataFrame, key: Key, columns: list[Column | str]) -> DataFrame:
    """``out.select(columns)``, refused when a key column is named like another column of
    the result (the caller would get two columns of one name)."""
    result = out.select(*columns)
    if key.names:
        others = [c for c in result.columns[len(key.names):] if c in key.names]
        if others:
            msg = (f"`by` must not name a column like one of the output's "
                   f"{result.columns[len(key.names):]}; got {others[0]!r} (rename it first, "
                   f"e.g. with .alias())")
            raise ValueError(msg)
    return result


def _event_time_output(job: OperatorJob, df: DataFrame, clock: EventTime) -> str | None:
    """The output column a stream's result carries its watermark on: the operator's declared
    event time, where the output's times are instants (Spark's watermark needs a
    ``timestamp``; a ``timestamp_ntz`` or integer time would lose it when restored)."""
    declared = job.declared.event_time_output
    if declared is not None and dict(job.schema).get(declared) != "timestamp":
        msg = (f"the operator's event_time_output must name one of its 'timestamp' output "
               f"columns; got {declared!r} (output schema: {job.schema})")
        raise ValueError(msg)
    if not df.isStreaming or clock.kind != "instant":
        return None
    return declared


def _output_columns(job: OperatorJob, returned: T.StructType, derived: dict[str, str],
                    clock: EventTime, project, key: Key, event_output: str | None = None,
                    unwatermarked: bool = False) -> list[Column | str]:
    """The result's columns, in one projection (each DataFrame call is an analysis in the
    JVM): the ``key`` columns first, each back in its own name and type (``project`` is given
    the others); timestamps back in ``clock``'s kind; on a batch, the operator's ``derived`` outputs
    (SQL over the columns Python sent), the task's shard (one shard per task) and the
    rejected rows' reason (a batch's rejected rows are all malformed, and they alone have a
    detail) made here. An ``unwatermarked`` stream's columns say so in their metadata
    (see :func:`~windowkit.spark.event_time.check_watermarkable`)."""
    kinds = dict(job.schema)
    # int64 µs from Python, back to what the user's time is, or to intervals
    restore = {"timestamp": clock.restore, "duration": _interval}
    sent = {field.name for field in returned.fields}
    metadata = {NO_WATERMARK_METADATA: True} if unwatermarked else None
    keys = key.restored(F.col(KEY), metadata) if KEY in kinds else []
    columns: dict[str, Column | str] = {}
    for name in [n for n, _ in job.schema if n != KEY] + [SHARD_OUT, REJECTED, DETAIL_OUT]:
        kind = kinds.get(name)
        if name in sent:
            column = F.col(name) if kind in restore else name
        elif name in derived:
            column = F.expr(derived[name])
        elif name == SHARD_OUT:
            column = F.spark_partition_id()
        else:
            column = F.expr(f"CASE WHEN {DETAIL_OUT} IS NOT NULL THEN 'malformed' END")
        if name == event_output:
            # a timestamp already, and passed as it is: an expression would drop the
            # watermark Spark put on the column
            column = name
        elif kind in restore:
            column = restore[kind](column)
        if metadata:  # on every column: a user keeps some of them
            column = as_column(column).alias(name, metadata=metadata)
        columns[name] = column
    if project is None:
        return [*keys, *[named(name, column) for name, column in columns.items()]]
    return [*keys, *project(columns)]


def _interval(micros: Column) -> Column:
    """A number of microseconds as a day-time interval (``INTERVAL DAY TO SECOND``)."""
    return F.make_dt_interval(secs=micros.cast("decimal(18,0)") / F.lit(1_000_000))


def named(name: str, column: Column | str) -> Column | str:
    """A column of the adapter's result under ``name``, for a caller's ``project``.

    Examples
    --------
    >>> named("start", "start"), str(named("start", F.col("x"))) == str(F.col("x").alias("start"))
    ('start', True)
    """
    return column if isinstance(column, str) else column.alias(name)


def as_column(column: Column | str) -> Column:
    """A column of the adapter's result as a Column, for a caller's ``project``.

    Examples
    --------
    >>> str(as_column("rejected")) == str(F.col("rejected"))
    True
    """
    return F.col(column) if isinstance(column, str) else column


def _run_partition(
    factory: Callable[[], StreamOperator],
    shipped: list[str],
    folded: str | None,
    schema: T.StructType,
    categorical: tuple[str, ...],
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """One task of a batch job, the shard of its partition: the shard's rows arrive packed
    (see :func:`_pack_rows`), its runner takes them all, then the input ends."""
    wait_to_be_killed()
    arrow_schema = _arrow_schema(schema)
    shard = TaskContext.get().partitionId()
    pieces = []
    for batch in batches:
        for blob in batch.column(PAYLOAD).to_pylist():
            for rows in pa.ipc.open_stream(blob):
                good, rejected = _take_rejected(rows, shipped, folded)
                if len(rejected):
                    yield _to_arrow(rejected[[REJECTED, DETAIL_OUT]], shard, arrow_schema)
                pieces.append(good)
    if not pieces:
        return
    for part in run_to_end(factory, pa.Table.from_batches(pieces), folded, categorical):
        yield _to_arrow(part, shard, arrow_schema)


def run_to_end(factory: Callable[[], StreamOperator], rows: pa.Table, folded: str | None,
               categorical: tuple[str, ...]) -> Iterator[pd.DataFrame]:
    """A bounded input's good rows of one shard (``key``, ``time`` and the shipped inputs, as
    the adapter ships them) through a fresh runner, then the end of the input: the operator's
    output, in parts. The one run of a batch shard, here and in the SQL table functions
    (:mod:`windowkit.spark.sql`).

    Examples
    --------
    >>> from windowkit.core.frames import ThresholdFramer
    >>> rows = pa.table({KEY: ["a"] * 3, TIME: pa.array([0, 1, 2], pa.int64()),
    ...                  "value": pa.array([1, 1, 0], pa.int8())})
    >>> [p[["start", "end"]].values.tolist() for p in run_to_end(ThresholdFramer, rows, None, ())]
    [[[0, 2]]]
    """
    runner = EventTimeRunner(factory())
    output, _ = runner.push(_arrow_to_frame(rows, folded, categorical))
    for part in (output, runner.finish()):
        if len(part):
            yield part


def spread_group_ids(shards: int) -> list[int]:
    """One grouping value per shard, chosen so that Spark's hash partitioning of a stateful
    operator with ``shards`` partitions puts every shard in a partition of its own.

    The shard numbers ``0, 1, ...`` themselves collide (with 2 partitions, 0 and 1 hash to the
    same one), and the shards would then run one after the other in one task. The values
    depend on ``shards`` only, so they are the same after a restart from a checkpoint.

    Examples
    --------
    >>> spread_group_ids(2), spread_group_ids(1)
    ([2, 0], [0])
    """
    ids: list[int | None] = [None] * shards
    value, missing = 0, shards
    while missing:
        partition = spark_hash_int(value) % shards
        if ids[partition] is None:
            ids[partition] = value
            missing -= 1
        value += 1
    return ids


def spark_hash_int(value: int) -> int:
    """Spark's ``hash()`` of an ``int`` (Murmur3 x86 32-bit, seed 42), which its hash
    partitioning takes modulo the number of partitions.

    Examples
    --------
    >>> spark_hash_int(0), spark_hash_int(1)
    (933211791, -559580957)
    """
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    k1 = rotl((value & mask) * 0xCC9E2D51 & mask, 15) * 0x1B873593 & mask
    h1 = (rotl(42 ^ k1, 13) * 5 + 0xE6546B64) & mask
    h1 ^= 4
    h1 = (h1 ^ (h1 >> 16)) * 0x85EBCA6B & mask
    h1 = (h1 ^ (h1 >> 13)) * 0xC2B2AE35 & mask
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def _coded_columns(job: OperatorJob, key_carrier: str | None = None) -> tuple[str, ...]:
    """The shipped text columns the operator takes as dictionary codes (a Categorical): the
    key, the column carrying a stream's key, and the ``categorical`` inputs.

    Examples
    --------
    >>> from windowkit.core.frames import ThresholdFramer
    >>> _coded_columns(OperatorJob(ThresholdFramer, {"value": F.lit(True)}), "wk_original_0")
    ('key', 'wk_original_0')
    """
    return (KEY, *([key_carrier] if key_carrier is not None else []), *job.categorical)


def _pack_rows(group_ids: list[int], has_event_time: bool,
               batches: Iterator[pa.RecordBatch],
               coded: tuple[str, ...] = ()) -> Iterator[pa.RecordBatch]:
    """One row per (input batch, shard) holding the rows as Arrow IPC, its shard as the
    shard's group id (an event-time column of a stream's watermark is read in the JVM and
    dropped here). The ``coded`` text columns travel dictionary-encoded: the operator takes
    them as codes anyway, and codes compress and decode far faster than the text (threshold
    frames, 5 M readings of 1,000 routers: 14.2 MB -> 1.2 MB packed; packing, unpacking and
    the operator's frame 0.48 -> 0.22 s of CPU)."""
    for batch in batches:
        if has_event_time:
            batch = batch.drop_columns([EVENT_TIME])
        shards, payloads = [], []
        for shard, part in _split_by_shard(batch):
            part = _dictionary_coded(part, coded)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, part.schema, options=PACKED_IPC_OPTIONS) as writer:
                writer.write_batch(part)
            shards.append(group_ids[shard])
            payloads.append(sink.getvalue().to_pybytes())
        yield pa.RecordBatch.from_arrays(
            [pa.array(shards, pa.int32()), pa.array(payloads, pa.binary())],
            names=[SHARD, PAYLOAD])


def _unpack_rows(frames: Iterator[pd.DataFrame]) -> pa.Table:
    tables = [pa.ipc.open_stream(blob).read_all()
              for pdf in frames for blob in pdf[PAYLOAD]]
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def _dictionary_coded(rows: pa.RecordBatch, names: tuple[str, ...]) -> pa.RecordBatch:
    """``rows`` with its text columns among ``names`` dictionary-encoded (each batch with a
    dictionary of its own; Arrow unifies them where the codes are read as a Categorical).

    Examples
    --------
    >>> rows = pa.RecordBatch.from_pydict({KEY: ["a", "b", "a"], TIME: [1, 2, 3]})
    >>> _dictionary_coded(rows, (KEY,)).column(0).indices.to_pylist()
    [0, 1, 0]
    """
    arrays = [pc.dictionary_encode(column) if name in names and column.type == pa.string()
              else column for name, column in zip(rows.schema.names, rows.columns, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, names=rows.schema.names)


def _is_coded_text(data_type: pa.DataType) -> bool:
    return pa.types.is_dictionary(data_type) and data_type.value_type == pa.string()


def _text(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A text column as plain text, whether it travelled dictionary-encoded or not."""
    return pc.cast(column, pa.string()) if _is_coded_text(column.type) else column


def _key_from_carrier(rows: pa.Table, carrier: str) -> pa.Table:
    """``rows`` (no malformed ones) with the key column made from the column that carries
    the user's key (text as it is, integers as their decimal text, as Spark casts them).

    Examples
    --------
    >>> rows = pa.table({KEY: pa.nulls(2, pa.string()), "k": pa.array([7, -1])})
    >>> _key_from_carrier(rows, "k").column(KEY).to_pylist()
    ['7', '-1']
    """
    text = rows.column(carrier)
    if text.type != pa.string() and not _is_coded_text(text.type):
        text = pc.cast(text, pa.string())
    return rows.set_column(rows.schema.get_field_index(KEY), KEY, text)


def _take_malformed(rows: pa.RecordBatch | pa.Table,
                    shipped: list[str]) -> tuple[pa.RecordBatch | pa.Table, pd.DataFrame]:
    """Split off rows marked malformed (a null time; the key column, or with a typed key
    the detail column, holds the row as JSON): ``(good rows, rejected frame)``."""
    if rows.column(TIME).null_count:
        valid = pc.is_valid(rows.column(TIME))
        detail = DETAIL_IN if DETAIL_IN in rows.column_names else KEY
        rejected = pd.DataFrame({REJECTED: "malformed", DETAIL_OUT: _text(rows.filter(
            pc.invert(valid)).column(detail)).to_pandas()})
        rows = rows.filter(valid)
    else:
        rejected = pd.DataFrame({REJECTED: [], DETAIL_OUT: []})
    return rows.select([KEY, TIME, *shipped]), rejected


def _take_rejected(rows: pa.RecordBatch | pa.Table, shipped: list[str],
                   folded: str | None) -> tuple[pa.RecordBatch | pa.Table, pd.DataFrame]:
    """:func:`_take_malformed`, then (with a folded code, whose null flags a row)
    :func:`_take_flagged`."""
    good, rejected = _take_malformed(rows, shipped)
    if folded is None:
        return good, rejected
    good, flagged = _take_flagged(good)
    if not len(flagged):
        return good, rejected
    return good, pd.concat([rejected, flagged], ignore_index=True) if len(rejected) else flagged


def _take_flagged(rows: pa.RecordBatch | pa.Table) -> tuple[pa.RecordBatch | pa.Table,
                                                               pd.DataFrame]:
    """Flagged rows (folded code 3): reported as malformed and kept with the code of -1 (0).

    Rare, so only a batch that has one pays for decoding its key column.
    """
    times = rows.column(TIME).to_numpy()
    is_flagged = (times & FLAGGED_CODE) == FLAGGED_CODE
    if not is_flagged.any():
        return rows, pd.DataFrame({REJECTED: [], DETAIL_OUT: []})
    key = rows.column(KEY)
    keys = _text(key).to_numpy(zero_copy_only=False).copy()
    details = []
    for i in np.flatnonzero(is_flagged).tolist():
        keys[i], detail = keys[i].split(FLAG_SEPARATOR, 1)
        details.append(detail)
    times = np.where(is_flagged, times - FLAGGED_CODE, times)  # code 3 -> 0, i.e. value -1
    columns = {name: rows.column(name) for name in rows.column_names}
    # coded as it came: every batch of a task must have one schema
    columns[KEY] = (pc.dictionary_encode(pa.array(keys, pa.string()))
                    if _is_coded_text(key.type) else pa.array(keys, pa.string()))
    columns[TIME] = pa.array(times, pa.int64())
    fixed = pa.table(columns) if isinstance(rows, pa.Table) else pa.RecordBatch.from_pydict(
        columns)
    return fixed, pd.DataFrame({REJECTED: "malformed", DETAIL_OUT: details})


def _split_by_shard(batch: pa.RecordBatch) -> Iterator[tuple[int, pa.RecordBatch]]:
    """``(shard, its rows without the shard column)`` for each shard present in ``batch``."""
    shard_ids = batch.column(SHARD).to_numpy()
    rows = batch.drop_columns([SHARD])
    present = np.unique(shard_ids).tolist()
    for shard in present:
        yield shard, (rows if len(present) == 1 else rows.filter(pa.array(shard_ids == shard)))


def _arrow_to_frame(table: pa.Table, folded: str | None = None,
                    categorical: tuple[str, ...] = ()) -> pd.DataFrame:
    """The operator's input frame; the key column and the ``categorical`` inputs as
    Categoricals (codes, not strings), and the ``folded`` input taken back out of the time's
    low bits."""
    columns = {}
    for name in table.column_names:
        column = table.column(name)
        if name == KEY or name in categorical:
            # coded where packed (Arrow unifies the batches' dictionaries), or encoded here
            # chunk by chunk with one dictionary: no copy of the strings first
            coded = column if _is_coded_text(column.type) else column.dictionary_encode()
            columns[name] = coded.to_pandas()
        elif name == TIME:
            columns[name] = column.to_numpy().astype(np.int64, copy=False)
        else:
            columns[name] = _text(column).to_pandas()
    if folded is not None:
        shipped = columns[TIME]
        columns[TIME] = shipped >> FOLD_BITS  # arithmetic shift: floor, right for times < 0
        columns[folded] = (shipped & ((1 << FOLD_BITS) - 1)).astype(np.int8) - np.int8(1)
    return pd.DataFrame(columns, copy=False)


def _arrow_schema(schema: T.StructType) -> pa.Schema:
    types = {T.LongType: pa.int64(), T.DoubleType: pa.float64(), T.BooleanType: pa.bool_(),
             T.StringType: pa.string(), T.BinaryType: pa.binary(), T.IntegerType: pa.int32()}
    return pa.schema([pa.field(f.name, types[type(f.dataType)]) for f in schema.fields])


def _to_arrow(frame: pd.DataFrame, shard: int, arrow_schema: pa.Schema) -> pa.RecordBatch:
    """A batch job's output rows, column by column: ``frame``'s columns of the schema (the
    operator's output, or rejected rows' ``rejected`` and ``detail``), the others null, and
    the shard. No padded pandas copy; the constant and null columns are made by Arrow."""
    n = len(frame)

    def column(field: pa.Field) -> pa.Array:
        if field.name == SHARD_OUT:
            return pa.array(np.full(n, shard, dtype=np.int32)).cast(field.type)
        if field.name in frame:
            return pa.Array.from_pandas(frame[field.name], type=field.type)  # NaN is null
        return pa.nulls(n, field.type)

    return pa.RecordBatch.from_arrays([column(f) for f in arrow_schema], schema=arrow_schema)


def _carriers(own: dict[str, Column], job: OperatorJob) -> dict[str, str]:
    """The column that carries each of the user's columns to the stateful step: a shipped
    input with the very same expression (the operator's text columns are often the user's
    own, and each column costs the JVM's Arrow writer per row), else one of its own."""
    shipped = {str(job.inputs[name]): name for name in job.shipped()}
    return {name: shipped.get(str(column), f"{ORIGINAL_PREFIX}{i}")
            for i, (name, column) in enumerate(own.items())}


def row_json(df: DataFrame, *, own_only: bool = True) -> Column:
    """Each row of ``df`` as the JSON text a rejected row is reported with (Spark's
    ``to_json`` of a struct of its columns; ``own_only``: windowkit's own columns left out).

    Examples
    --------
    >>> df = spark.createDataFrame([(1, "a", 2)], "x int, s string, wk_code int")
    >>> df.select(row_json(df)).first()[0], df.select(row_json(df, own_only=False)).first()[0]
    ('{"x":1,"s":"a"}', '{"x":1,"s":"a","wk_code":2}')
    """
    # quoted names, not F.col: each pyspark function call costs many py4j round trips
    return F.to_json(F.struct(*[f"`{c}`" for c in df.columns
                                if not (own_only and c.startswith(INTERNAL_PREFIX))]))


def user_column(name: str) -> Column:
    """The column ``name`` of the input as it is: a job input built with this (rather than a
    cast or an expression of it) also carries a stream's late rows' copy of that column.

    Examples
    --------
    >>> str(user_column("fd")) == str(user_column("fd"))
    True
    """
    return F.col(f"`{name}`")


def _own_columns(df: DataFrame) -> dict[str, Column]:
    """The user's columns of ``df`` (not windowkit's own), in a form Arrow carries."""
    own = {}
    for field in df.schema.fields:
        if field.name.startswith(INTERNAL_PREFIX):
            continue
        column = user_column(field.name)
        if isinstance(field.dataType, _NOT_IN_ARROW):
            column = column.cast("string")
        own[field.name] = column
    return own


_KEY_CARRIER_TYPES = (T.StringType, T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NOT_IN_ARROW = tuple(getattr(T, name) for name in ("CalendarIntervalType", "VariantType",
                                                      "ObjectType") if hasattr(T, name))


def _late_frame(late: pd.DataFrame, originals: pa.Table | None,
                carriers: list[tuple[str, str]]) -> pd.DataFrame:
    """Late rows as rejected rows; ``detail`` is the user's row as JSON, as Spark's
    ``to_json`` writes it for a malformed row (``carriers``: each user column's name and the
    column of ``originals`` that carries it)."""
    positions = pa.array(late.index.to_numpy(dtype=np.int64))
    records = originals.take(positions).to_pylist() if originals is not None else []
    details = [spark_json({name: record[column] for name, column in carriers})
               for record in records]
    return pd.DataFrame({REJECTED: "late", DETAIL_OUT: details})


def spark_json(row: dict) -> str:
    """``row`` as Spark's ``to_json(struct(...))`` writes it: null fields left out,
    timestamps with milliseconds and the zone's offset, dates as ``yyyy-MM-dd``, NaN and
    infinities as strings, binary as base64.

    Examples
    --------
    >>> import datetime as dt
    >>> spark_json({"k": "a", "t": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc),
    ...             "v": float("nan"), "n": None})
    '{"k":"a","t":"2024-01-02T03:04:05.000Z","v":"NaN"}'
    """
    return json.dumps(_json_value(row), separators=(",", ":"), ensure_ascii=False)


def _json_value(value: object) -> object:
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items() if v is not None}
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        # Arrow hands a map over as a list of (key, value) pairs; Spark writes an object
        return {str(k): _json_value(v) for k, v in value}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, dt.datetime):
        text = f"{value:%Y-%m-%dT%H:%M:%S}.{value.microsecond // 1000:03d}"
        offset = value.utcoffset()
        if offset is None:
            return text
        if not offset:
            return text + "Z"
        minutes = int(offset.total_seconds()) // 60
        sign = "+" if minutes >= 0 else "-"
        return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, decimal.Decimal):
        # a number where a double holds it exactly, its digits as a string where it does not
        number = float(value)
        return number if decimal.Decimal(number) == value else str(value)
    if isinstance(value, str | bool | int) or value is None:
        return value
    return str(value)


def _to_spark_frame(
    output: pd.DataFrame, rejected: pd.DataFrame, schema: list[tuple[str, str]], shard: int,
    event_output: str | None = None,
) -> pd.DataFrame:
    names = [n for n, _ in schema]
    output = output[names].assign(**{SHARD_OUT: shard, REJECTED: None, DETAIL_OUT: None})
    if event_output is not None:
        # the watermarked column is a Spark timestamp: int64 µs as UTC instants
        output[event_output] = pd.to_datetime(output[event_output], unit="us", utc=True)
    if not len(rejected):
        return output
    # Rejected rows are rare: pad them with nulls and widen to object dtypes only then.
    padded = {n: pd.Series([None] * len(rejected), dtype=object) for n in names}
    padded[SHARD_OUT] = shard
    padded[REJECTED] = rejected[REJECTED].to_numpy()
    padded[DETAIL_OUT] = rejected[DETAIL_OUT].to_numpy()
    padded = pd.DataFrame(padded)
    if not len(output):
        return padded
    return pd.concat([output.astype(object), padded], ignore_index=True)


def _own_watermark_delay(df: DataFrame, late: str | None) -> int | None:
    """The delay of the watermark defined here, in µs, if it is the query's only one.

    With a watermark already on the input, Spark's global watermark is the minimum of the two
    and nothing can be anticipated from this one: None.
    """
    if watermarked(df) is not None:
        return None
    if late is None:
        return 0
    try:
        return to_micros(late, "late")
    except ValueError:  # a zero or an interval form only Spark parses: do not anticipate
        return None


def _watermark_us(timer_values) -> int | None:
    wm = timer_values.getCurrentWatermarkInMs()
    return wm * 1000 if wm is not None and wm > 0 else None
