"""``threshold_frames``: data-driven windows on batch and streaming DataFrames."""

from __future__ import annotations

import functools
import re

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.durations import Duration
from windowkit.core.frames import (
    FRAME_STATUSES,  # noqa: F401 - public here too (``status`` is null on a rejected row)
    VALUE,
    DuplicatePolicy,
    Extent,
    MissingPolicy,
    SequenceFrameSpec,
    ThresholdFramer,
)
from windowkit.spark.adapter import (
    DETAIL_OUT,
    INTERNAL_PREFIX,
    REJECTED,
    OperatorJob,
    named,
    run_operator,
)
from windowkit.spark.columns import quoted_name
from windowkit.spark.event_time import TimeUnit, event_time
from windowkit.spark.keys import KeyLike, resolve_key
from windowkit.spark.rejected import deprecated_splitter


def threshold_frames(
    df: DataFrame,
    time: str | Column,
    when: str | Column,
    by: KeyLike = None,
    min_duration: str | int | Duration = "1 rows",
    missing: MissingPolicy = "unsatisfied",
    schedule: str | None = None,
    fragment_every: str | int | Duration | None = None,
    late: str | None = "1 minute",
    shards: int | None = None,
    time_unit: TimeUnit | None = None,
    duplicates: DuplicatePolicy = "keep",
    extent: Extent = "conservative",
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
        Event time: a timestamp, ``timestamp_ntz`` (read as the wall-clock time it holds,
        whatever the session time zone), date or timestamp-string column, or an integer
        column with ``time_unit``.
    when : str or Column
        The predicate, a Column or a SQL expression such as ``"loss_rate > 0.003"``. It is
        evaluated with Spark's non-ANSI casts whatever ``spark.sql.ansi.enabled`` says, so a
        value it cannot evaluate (``'n/a' > 0.003``) gives the same result everywhere: a
        report of unknown value (a missing value for the framing) that also comes out as a
        ``malformed`` row. A null, NaN or ±inf in a column the predicate names is a missing
        value (Spark orders NaN above every number, so ``v > 0`` would hold for it).
    by : str, Column or list of them, optional
        The key: a column name, a Column, or a list of them (a composite key); frames are
        computed per key, and each key column comes first in the output under its own name
        and type. A row with a null in a key column is rejected as ``malformed``.
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
        Spark groups the keys are hashed into (default: one per core on a batch,
        ``spark.sql.shuffle.partitions`` on a stream). Keep
        it fixed across restarts of a streaming query.
    time_unit : {"s", "ms", "us", "ns"}, optional
        The unit of an integer ``time`` column (required for one); output times are then
        integers in that unit.
    duplicates : {"keep", "any", "all"}
        Rows of one key at the same time (see :class:`~windowkit.core.frames.ThresholdFramer`):
        all are reports, taken in a fixed order whatever the input order (``"keep"``), or one
        report that holds if any (``"any"``) or all (``"all"``) of them hold.
    extent : {"conservative", "liberal"}
        ``start`` is the frame's first satisfying row, or (``"liberal"``, appendix F) the last
        report before it, one that did not satisfy the predicate.

    Returns
    -------
    DataFrame
        ``key`` (named after ``by``), ``frame_id``, ``start``, ``end``, ``last``, ``n_tuples``,
        ``n_missing``, ``status`` (``partial``/``final``), ``rejected`` and ``detail``: a row that
        could not be framed (a null or unparsable time, or one beyond 2**61 µs from 1970; a
        null ``by`` key; a predicate that cannot be evaluated; or behind the watermark) comes
        out with its reason in ``rejected`` (``malformed``/``late``), the row as JSON in
        ``detail`` and null frame columns. :func:`windowkit.spark.split_rejected` separates
        them.

    Examples
    --------
    Appendix B's stream (integer times), frames where Temperature > 32:

    >>> temps = [30, 31, 33, 34, 30, 34, 33, 34, 35, 32]
    >>> df = spark.createDataFrame([("s1", t, x) for t, x in enumerate(temps, 1)],
    ...                            "sensor string, t long, temp int")
    >>> frames = threshold_frames(df, time="t", when="temp > 32", by="sensor", time_unit="s")
    >>> frames.select("sensor", "start", "last", "end", "status").orderBy("start").show()
    +------+-----+----+---+------+
    |sensor|start|last|end|status|
    +------+-----+----+---+------+
    |    s1|    3|   4|  5| final|
    |    s1|    6|   9| 10| final|
    +------+-----+----+---+------+
    <BLANKLINE>
    """
    factory = threshold_operator(**locals())  # the parameters alone, as SQL calls it too
    # the caller's columns are resolved before windowkit's own exist: Spark's "did you mean"
    # then lists only the caller's
    key = resolve_key(df, by)
    event_time(df, time, time_unit)
    coded = _with_predicate_code(df, when)
    job = OperatorJob(factory=factory, inputs={VALUE: F.col(_CODE)})
    return run_operator(coded, job, time=time, key=key, shards=shards, late=late,
                        time_unit=time_unit, project=frames_projection)


def frame_spec(*, min_duration: str | int | Duration, missing: str, schedule: str | None,
               fragment_every: str | int | Duration | None, extent: str, duplicates: str,
               **_: object) -> SequenceFrameSpec:
    """The frame specification of a frames function's parameters (given as keywords; the
    others are ignored), checked: the one reading of them by every frames function and its
    SQL table function.

    Examples
    --------
    >>> frame_spec(min_duration="3 rows", missing="unsatisfied", schedule=None,
    ...            fragment_every=None, extent="conservative", duplicates="keep", by="r").extent
    'conservative'
    """
    return SequenceFrameSpec.create(min_duration, missing, schedule, fragment_every, extent,
                                    duplicates)


def threshold_operator(**params: object) -> functools.partial:
    """The operator factory :func:`threshold_frames` runs, from its parameters (keywords).

    Examples
    --------
    >>> factory = threshold_operator(min_duration="2 rows", missing="unsatisfied",
    ...                              schedule=None, fragment_every=None,
    ...                              extent="conservative", duplicates="keep")
    >>> type(factory()).__name__
    'ThresholdFramer'
    """
    return functools.partial(ThresholdFramer, spec=frame_spec(**params))


#: The columns of every framing's output after the key (``by``, or ``key``).
FRAME_COLUMNS = ["frame_id", "start", "end", "last", "n_tuples", "n_missing", "status",
                 REJECTED, DETAIL_OUT]


def frames_projection(columns: dict[str, Column | str]) -> list[Column | str]:
    """The adapter's projection to frames as every framing gives them (after the key
    columns, which the adapter puts first): :data:`FRAME_COLUMNS`.

    Examples
    --------
    >>> frames = threshold_frames(spark.createDataFrame([("s1", 1, 40)], "s string, t long, x int"),
    ...                           "t", "x > 32", by="s", time_unit="s")
    >>> frames.columns[:3]
    ['s', 'frame_id', 'start']
    """
    return [named(name, columns[name]) for name in FRAME_COLUMNS]


#: Deprecated: :func:`windowkit.spark.split_rejected` splits every function's output.
split_rejected = deprecated_splitter("windowkit.spark.frames.split_rejected")


_CODE = f"{INTERNAL_PREFIX}code"


def _with_predicate_code(df: DataFrame, when: str | Column) -> DataFrame:
    """``df`` with the predicate's code (1 holds, 0 does not, -1 missing, null when it cannot
    be evaluated on present inputs), analysed with non-ANSI casts.

    Spark fixes a cast's ANSI mode when it analyses the expression, so the projection is
    analysed here with ANSI off and keeps those semantics wherever the plan runs.
    """
    predicate = F.expr(when) if isinstance(when, str) else when
    dtype = df.select(predicate).schema.fields[0].dataType
    if not isinstance(dtype, T.BooleanType):
        msg = f"`when` must be a predicate (true or false); {when!r} gives {dtype.simpleString()}"
        raise ValueError(msg)
    names = _referenced_columns(df.columns, when)
    missing_input = F.lit(False)
    for name in names:
        col = F.col(f"`{name}`")
        missing_input = missing_input | col.isNull()
        dtype = df.schema[name].dataType
        if isinstance(dtype, (T.FloatType, T.DoubleType, T.StringType)):
            # a string the predicate compares with a number is cast to double: "NaN" too
            number = col if not isinstance(dtype, T.StringType) else col.cast("double")
            infinite = F.coalesce(F.abs(number) == float("inf"), F.lit(False))
            missing_input = missing_input | F.isnan(number) | infinite
    # a missing input is a missing value (-1); a predicate that cannot be evaluated on
    # present inputs is null: reported as malformed, and counted as missing
    code = (F.when(missing_input, F.lit(-1)).when(predicate.isNull(), F.lit(None))
            .when(predicate, F.lit(1)).otherwise(F.lit(0)).cast("tinyint"))
    spark = df.sparkSession
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        coded = df.withColumn(_CODE, code)
        coded.schema  # noqa: B018 - forces the analysis while ANSI is off
    finally:
        spark.conf.set("spark.sql.ansi.enabled", ansi)
    return coded


def predicate_code_sql(when: str, fields: list[T.StructField]) -> str:
    """The SQL text of :func:`_with_predicate_code`'s code for a predicate given as SQL text
    over columns ``fields`` (for a plan Python builds no Column of: the projection a SQL table
    function asks Spark for, :mod:`windowkit.spark.sql`). Its casts are the session's: Spark
    gives a SQL table function's projection no analysis of its own.

    Examples
    --------
    >>> df = spark.createDataFrame([(1.0,), (0.0,), (None,), (float("nan"),)], "x double")
    >>> sql = predicate_code_sql("x > 0.5", df.schema.fields)
    >>> [r[0] for r in df.selectExpr(sql).collect()]
    [1, 0, -1, -1]
    """
    missing = ["false"]
    types = {f.name: f.dataType for f in fields}
    for name in _referenced_columns(list(types), when):
        column = quoted_name(name)
        missing.append(f"{column} IS NULL")
        if isinstance(types[name], (T.FloatType, T.DoubleType, T.StringType)):
            number = f"try_cast({column} AS DOUBLE)"
            missing.append(f"isnan({number})")
            missing.append(f"coalesce(abs({number}) = double('inf'), false)")
    return (f"CAST(CASE WHEN {' OR '.join(missing)} THEN -1 WHEN ({when}) IS NULL THEN NULL "
            f"WHEN ({when}) THEN 1 ELSE 0 END AS TINYINT)")


def _referenced_columns(columns: list[str], when: str | Column) -> list[str]:
    text = when if isinstance(when, str) else str(when)
    return [c for c in columns if re.search(rf"(?<![\w.`]){re.escape(c)}(?![\w`])", text)
            or f"`{c}`" in text]
