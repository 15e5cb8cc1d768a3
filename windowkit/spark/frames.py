"""``threshold_frames``: data-driven windows on batch and streaming DataFrames."""

from __future__ import annotations

import functools
import re

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.durations import Duration
from windowkit.core.frames import (
    OUTPUT_SCHEMA,
    VALUE,
    MissingPolicy,
    ThresholdFramer,
    ThresholdFrameSpec,
)
from windowkit.core.operator import KEY
from windowkit.spark.adapter import DETAIL_OUT, REJECTED, OperatorJob, run_operator

FRAME_STATUSES = ("partial", "final")


def threshold_frames(
    df: DataFrame,
    time: str | Column,
    when: str | Column,
    by: str | None = None,
    min_duration: str | int | Duration = "1 rows",
    missing: MissingPolicy = "unsatisfied",
    schedule: str | None = None,
    fragment_every: str | int | Duration | None = None,
    late: str | None = "1 minute",
    shards: int | None = None,
) -> DataFrame:
    """Maximal periods where ``when`` holds, per ``by`` key (NiagaraST's frame operator).

    Works on batch and streaming DataFrames alike. Semantics are those of
    :class:`windowkit.core.frames.ThresholdFramer`: half-open frames ``[start, end)`` that start
    and end on rows where the predicate holds, at least ``min_duration`` long, with missing
    values (a null predicate, or with ``schedule`` an absent report) breaking frames or bridged
    between satisfying rows.

    Parameters
    ----------
    df : DataFrame
        The readings.
    time : str or Column
        Event time: a timestamp column (or an integer column of microseconds).
    when : str or Column
        The predicate, a Column or a SQL expression such as ``"loss_rate > 0.003"``; null means
        missing.
    by : str, optional
        The key column; frames are computed per key.
    min_duration : str, int or Duration
        ``"3 rows"`` or ``"90 seconds"``.
    missing : {"unsatisfied", "satisfying"}
        Whether missing values break frames (default) or are bridged.
    schedule : str, optional
        Reporting period such as ``"30 seconds"``: absent reports count as missing values.
    fragment_every : str, int or Duration, optional
        Emit ``partial`` rows for open frames this often (``"10 rows"``, ``"5 minutes"``).
    late : str, optional
        Streaming only: how late a row may arrive (watermark delay). Frames are emitted once
        the watermark passes their rows; rows behind the watermark come out as ``late``.
    shards : int, optional
        Spark groups the keys are hashed into (default: ``spark.sql.shuffle.partitions``). Keep
        it fixed across restarts of a streaming query.

    Returns
    -------
    DataFrame
        ``key`` (named after ``by``), ``frame_id``, ``start``, ``end``, ``last``, ``n_tuples``,
        ``n_missing``, ``status`` (``partial``/``final``, or ``malformed``/``late`` for rows that
        could not be framed: a null or unparsable time, or one beyond 2**61 µs from 1970; a
        null ``by`` key; a predicate that cannot be evaluated; or behind the watermark; with
        the row as JSON in ``detail``).
        Use :func:`split_rejected` to separate them.

    Examples
    --------
    Appendix B's stream (integer times), frames where Temperature > 32:

    >>> temps = [30, 31, 33, 34, 30, 34, 33, 34, 35, 32]
    >>> df = spark.createDataFrame([("s1", t, x) for t, x in enumerate(temps, 1)],
    ...                            "sensor string, t long, temp int")
    >>> frames = threshold_frames(df, time="t", when="temp > 32", by="sensor")
    >>> frames.select("sensor", "start", "last", "end", "status").orderBy("start").show()
    +------+-----+----+---+------+
    |sensor|start|last|end|status|
    +------+-----+----+---+------+
    |    s1|    3|   4|  5| final|
    |    s1|    6|   9| 10| final|
    +------+-----+----+---+------+
    <BLANKLINE>
    """
    spec = ThresholdFrameSpec.create(min_duration, missing, schedule, fragment_every)
    predicate = F.expr(when) if isinstance(when, str) else when
    code = F.when(predicate.isNull(), F.lit(-1)).when(predicate, F.lit(1)).otherwise(F.lit(0))
    job = OperatorJob(
        factory=functools.partial(ThresholdFramer, spec=spec),
        schema=OUTPUT_SCHEMA,
        inputs={VALUE: code.cast("tinyint")},
        valid=evaluable(df, when, predicate),
        folded=VALUE,
    )
    out = run_operator(df, job, time=time, key=by, shards=shards, late=late)
    status = F.coalesce(F.col(REJECTED), F.col("status"))
    out = out.withColumn("status", status).drop(REJECTED)
    key_name = by if by is not None else KEY
    if by is not None:
        key_type = df.schema[by].dataType
        out = out.withColumn(KEY, F.col(KEY).cast(key_type))
    if _is_integer_time(df, time):
        for c in ("start", "end", "last"):
            out = out.withColumn(c, F.unix_micros(F.col(c)))
    out = out.withColumnRenamed(KEY, key_name)
    columns = [key_name, "frame_id", "start", "end", "last", "n_tuples", "n_missing", "status",
               DETAIL_OUT]
    return out.select(*columns)


def split_rejected(result: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Split a :func:`threshold_frames` result into (frames, rejected rows).

    Examples
    --------
    >>> df = spark.createDataFrame([(1, 5.0), (2, 7.0), (None, 9.0)], "t long, x double")
    >>> frames, rejected = split_rejected(threshold_frames(df, "t", "x > 1"))
    >>> frames.count(), rejected.select("status", "detail").first()
    (1, Row(status='malformed', detail='{"x":9.0}'))
    """
    is_frame = F.col("status").isin(*FRAME_STATUSES)
    return result.filter(is_frame).drop(DETAIL_OUT), result.filter(~is_frame)


def evaluable(df: DataFrame, when: str | Column, predicate: Column) -> Column:
    """False where the predicate is null although every column it names is non-null.

    A null input is a missing value (the paper's missing data); a null result from non-null
    inputs means the predicate could not be evaluated (e.g. ``'n/a' > 0.003`` with ANSI off),
    and such a row is malformed.

    Examples
    --------
    >>> df = spark.createDataFrame([("0.5",), ("n/a",), (None,)], "x string")
    >>> df.select(evaluable(df, "try_cast(x AS double) > 0.1",
    ...                     F.expr("try_cast(x AS double) > 0.1")).alias("ok")).collect()
    [Row(ok=True), Row(ok=False), Row(ok=True)]
    """
    text = when if isinstance(when, str) else str(when)
    names = [c for c in df.columns if re.search(rf"(?<![\w.`]){re.escape(c)}(?![\w`])", text)
             or f"`{c}`" in text]
    inputs_present = F.lit(True)
    for name in names:
        inputs_present = inputs_present & F.col(f"`{name}`").isNotNull()
    return ~(predicate.isNull() & inputs_present)


def _is_integer_time(df: DataFrame, time: str | Column) -> bool:
    col = F.col(time) if isinstance(time, str) else time
    return isinstance(df.select(col).schema.fields[0].dataType, T.IntegralType)
