"""Event-time columns: what a user's time column means, in int64 microseconds and back.

The core counts time in int64 microseconds since 1970 (UTC). A user's column becomes that here,
once, and the operators' output times go back to the column's own kind:

* ``timestamp`` (an instant) and timestamp strings: Spark's instant, as ``unix_micros``;
  output as timestamps. Instants do not depend on the session time zone.
* ``timestamp_ntz`` and ``date``: the wall-clock time they hold, read as if it were UTC, from
  the value's fields (never through a cast to ``timestamp``, which would apply
  ``spark.sql.session.timeZone`` and, around a daylight-saving change, skip or repeat an hour);
  output as ``timestamp_ntz``.
* integers: only with an explicit ``time_unit`` (``"s"``, ``"ms"``, ``"us"`` or ``"ns"``).
  Spark casts integers to timestamps as seconds, earlier windowkit read them as microseconds,
  and ``yyyymmdd`` integers are neither: guessing gave silently wrong windows, so an integer
  column without a unit is refused. Output times are integers in the same unit, rounded up
  (an end at ``last + 1 µs`` becomes ``last + 1`` unit: still after ``last``, still half-open).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.durations import TIME_UNITS, TimeUnit
from windowkit.spark.columns import resolve_column

__all__ = ["TIME_UNITS", "EventTime", "TimeUnit", "ceil_div", "check_watermarkable",
           "column_type", "event_time", "floor_div", "floor_div_sql", "time_kind", "watermarked"]
#: The column metadata Spark marks a stream's watermarked column with.
WATERMARK_METADATA = "spark.watermarkDelayMs"
#: The column metadata windowkit marks a stateful step's output stream with when none of its
#: columns carries a watermark: Spark allows no new one after a stateful step.
NO_WATERMARK_METADATA = "windowkit.noWatermark"
_MICROS_PER = {"s": 1_000_000, "ms": 1_000, "us": 1}
_NTZ_EPOCH = "timestamp_ntz'1970-01-01 00:00:00'"
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

Kind = Literal["instant", "wall_clock", "integer"]


@dataclass(frozen=True)
class EventTime:
    """How one time column maps to int64 microseconds.

    Parameters
    ----------
    column : Column
        The user's time column.
    kind : {"instant", "wall_clock", "integer"}
        Timestamps and timestamp strings are instants; ``timestamp_ntz`` and ``date`` are
        wall-clock times; integers need ``unit``.
    unit : str, optional
        The unit of an integer column.
    string : bool
        Whether the column holds timestamp strings (parsed with ``try_to_timestamp``: an
        unparsable string gives a null time, which the adapter sets aside as malformed).
    """

    column: Column
    kind: Kind
    unit: TimeUnit | None = None
    string: bool = False

    def micros(self) -> Column:
        """The column as int64 microseconds since 1970 (null where it has no time).

        Examples
        --------
        >>> df = spark.createDataFrame([(90,)], "t long")
        >>> df.select(event_time(df, "t", "s").micros()).first()[0]
        90000000
        """
        col = self.column
        if self.kind == "instant":
            return F.unix_micros(F.try_to_timestamp(col) if self.string else col)
        if self.kind == "wall_clock":
            # the fields of a wall-clock value do not depend on the session time zone
            ntz = col.cast("timestamp_ntz")
            return (F.unix_date(F.to_date(ntz)).cast("long") * 86_400_000_000
                    + F.hour(ntz).cast("long") * 3_600_000_000
                    + F.minute(ntz).cast("long") * 60_000_000
                    + _seconds_micros(ntz))
        if self.unit == "ns":
            return floor_div(col.cast("long"), 1000)
        per = _MICROS_PER[self.unit]
        if per == 1:
            return col.cast("long")
        # beyond int64 microseconds there is no time (null: the row is set aside as malformed)
        bound = (2**63 - 1) // per
        return F.when(col.between(-bound, bound), col.cast("long") * F.lit(per))

    @property
    def comparable(self) -> bool:
        """Whether the column's own order is its time's, so that it can be compared as it is
        (see :meth:`first_value`).

        Examples
        --------
        >>> df = spark.createDataFrame([(1, "2024-01-01")], "t long, s string")
        >>> event_time(df, "t", "s").comparable, event_time(df, "s").comparable
        (True, False)
        """
        return self.kind == "integer" or (self.kind == "instant" and not self.string)

    @property
    def first_value_exact(self) -> bool:
        """Whether :meth:`first_value` is exact: ``column >= first_value(m)`` holds for the
        rows whose time is at least ``m`` and no other (nanoseconds near the end of the long
        range have no bound that exact).

        Examples
        --------
        >>> df = spark.createDataFrame([(1,)], "t long")
        >>> event_time(df, "t", "s").first_value_exact, event_time(df, "t", "ns").first_value_exact
        (True, False)
        """
        return self.comparable and self.unit != "ns"

    def at_least(self, micros: int) -> Column | None:
        """A predicate on the column itself, true for every row whose time is at least
        ``micros``, that Spark can push into a file scan (Parquet skips the row groups whose
        statistics lie wholly before it); None where the column is not compared as it is
        (strings, wall-clock times). It may also hold for a few earlier rows: filter on
        :meth:`micros` for the exact bound.

        Examples
        --------
        >>> df = spark.createDataFrame([(89,), (90,), (91,)], "t long")
        >>> [r.t for r in df.filter(event_time(df, "t", "s").at_least(89_500_000)).collect()]
        [90, 91]
        """
        first = self.first_value(F.lit(int(micros)))
        return None if first is None else self.column >= first

    def first_value(self, micros: Column) -> Column | None:
        """The smallest value of the column whose time is at least ``micros`` (a µs long
        column), or one a little below it: ``column >= first_value(m)`` holds for every row
        whose time is at least ``m``. Spark pushes such a comparison into a Parquet scan when
        its right side is a literal or a scalar subquery. None where the column is not
        compared as it is (strings, wall-clock times).

        Examples
        --------
        >>> df = spark.createDataFrame([(1,)], "t long")
        >>> df.select(event_time(df, "t", "s").first_value(F.lit(-1_500_000))).first()[0]
        -1
        """
        if not self.comparable:
            return None
        if self.kind == "instant":
            return F.timestamp_micros(micros)
        if self.unit == "ns":  # beyond the long range: every row, or none
            return F.coalesce(F.try_multiply(micros, F.lit(1000)),
                              F.when(micros < 0, F.lit(-(2**63))).otherwise(F.lit(2**63 - 1)))
        return ceil_div(micros, _MICROS_PER[self.unit])

    def restore(self, micros: Column) -> Column:
        """Microseconds back to the column's own kind (see the module docstring).

        Examples
        --------
        >>> df = spark.createDataFrame([(90,)], "t long")
        >>> df.select(event_time(df, "t", "s").restore(F.lit(90_000_001))).first()[0]
        91
        """
        if self.kind == "instant":
            return F.timestamp_micros(micros)
        if self.kind == "wall_clock":
            return F.timestamp_add("MICROSECOND", micros, F.expr(_NTZ_EPOCH))
        if self.unit == "ns":
            return micros * F.lit(1000)
        per = _MICROS_PER[self.unit]
        return micros if per == 1 else ceil_div(micros, per)

    def micros_sql(self, column: str) -> str:
        """:meth:`micros` as SQL text over ``column`` (SQL text naming this column), for a
        plan Python builds no Column of (the projection a SQL table function asks Spark for,
        :mod:`windowkit.spark.sql`).

        Examples
        --------
        >>> df = spark.createDataFrame([(90,)], "t long")
        >>> df.selectExpr(event_time(df, "t", "s").micros_sql("t")).first()[0]
        90000000
        """
        if self.kind == "instant":
            return f"unix_micros({f'try_to_timestamp({column})' if self.string else column})"
        if self.kind == "wall_clock":
            ntz = f"CAST({column} AS TIMESTAMP_NTZ)"
            return (f"(CAST(unix_date(to_date({ntz})) AS BIGINT) * 86400000000"
                    f" + CAST(hour({ntz}) AS BIGINT) * 3600000000"
                    f" + CAST(minute({ntz}) AS BIGINT) * 60000000"
                    f" + CAST(date_part('SECOND', {ntz}) * 1000000 AS BIGINT))")
        if self.unit == "ns":
            return floor_div_sql(f"CAST({column} AS BIGINT)", 1000)
        per = _MICROS_PER[self.unit]
        if per == 1:
            return f"CAST({column} AS BIGINT)"
        bound = (2**63 - 1) // per
        return (f"CASE WHEN {column} BETWEEN {-bound} AND {bound} "
                f"THEN CAST({column} AS BIGINT) * {per} END")

    def restore_value(self, micros: int) -> object:
        """:meth:`restore` of one value in Python: a UTC ``datetime`` (an instant), a naive
        one (a wall-clock time) or an integer in the column's unit.

        Examples
        --------
        >>> df = spark.createDataFrame([(90,)], "t long")
        >>> event_time(df, "t", "s").restore_value(90_000_001)
        91
        >>> EventTime(F.col("t"), "instant").restore_value(1_500_000)
        datetime.datetime(1970, 1, 1, 0, 0, 1, 500000, tzinfo=datetime.timezone.utc)
        """
        if self.kind == "instant":
            return _EPOCH_UTC + dt.timedelta(microseconds=micros)
        if self.kind == "wall_clock":
            return _EPOCH_UTC.replace(tzinfo=None) + dt.timedelta(microseconds=micros)
        if self.unit == "ns":
            return micros * 1000
        per = _MICROS_PER[self.unit]
        return -(-micros // per)


def floor_div(value: Column, divisor: int) -> Column:
    """``floor(value / divisor)`` of a long column, exact: Spark's ``/`` divides doubles, which
    hold no long beyond 2**53 exactly (a time in ns since 1970 is beyond), and ``div``
    truncates toward zero.

    Examples
    --------
    >>> df = spark.createDataFrame([(-1001,), (1_700_000_000_123_456_999,)], "t long")
    >>> [r[0] for r in df.select(floor_div(F.col("t"), 1000)).collect()]
    [-2, 1700000000123456]
    """
    return _rounded_div(value, divisor, value < 0, -1)


def ceil_div(value: Column, divisor: int) -> Column:
    """``ceil(value / divisor)`` of a long column, exact (see :func:`floor_div`).

    Examples
    --------
    >>> df = spark.createDataFrame([(-1001,), (253_402_300_799_996_001,), (-(2**63),),
    ...                             (2**63 - 1,)], "t long")
    >>> [r[0] for r in df.select(ceil_div(F.col("t"), 1000)).collect()]
    [-1, 253402300799997, -9223372036854775, 9223372036854776]
    """
    return _rounded_div(value, divisor, value > 0, 1)


def _rounded_div(value: Column, divisor: int, away: Column, step: int) -> Column:
    """``value div divisor`` (truncated toward zero), moved by ``step`` where ``away`` holds
    and the division leaves a remainder."""
    size = F.lit(divisor)
    truncated = F.call_function("div", value, size)
    return truncated + F.when(away & (value % size != 0), step).otherwise(0)


def floor_div_sql(value: str, divisor: int) -> str:
    """:func:`floor_div` as SQL text over ``value`` (SQL text of a long).

    Examples
    --------
    >>> spark.sql(f"SELECT {floor_div_sql('x', 3)} FROM VALUES (-4), (4) AS t(x)").collect()
    [Row(...=-2), Row(...=1)]
    """
    return (f"(({value}) div {divisor}) - "
            f"IF(({value}) < 0 AND ({value}) % {divisor} != 0, 1, 0)")


def _seconds_micros(ntz: Column) -> Column:
    """Seconds and their fraction of a wall-clock value, in microseconds."""
    return (F.date_part(F.lit("SECOND"), ntz) * 1_000_000).cast("long")


def column_type(df: DataFrame, column: str | Column) -> T.DataType:
    """The type of a column of ``df``, or of an expression over it.

    A column named as it is reads the DataFrame's cached schema; anything else is analysed.

    Examples
    --------
    >>> df = spark.createDataFrame([(1,)], "t long")
    >>> column_type(df, "t"), column_type(df, F.col("t").cast("string"))
    (LongType(), StringType())
    """
    return resolve_column(df, column, "column").type


def event_time(df: DataFrame, time: str | Column, time_unit: str | None = None) -> EventTime:
    """Classify ``df``'s time column; raise ``ValueError`` naming ``time_unit`` if it is wrong.

    Parameters
    ----------
    df : DataFrame
        The input.
    time : str or Column
        A timestamp, ``timestamp_ntz``, date, timestamp string or integer column.
    time_unit : {"s", "ms", "us", "ns"}, optional
        Required for an integer column, refused for any other.

    Returns
    -------
    EventTime

    Examples
    --------
    >>> df = spark.createDataFrame([(1,)], "t long")
    >>> event_time(df, "t")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `time_unit` is required for the integer time column 't': ...
    >>> event_time(df, "t", "ms").unit
    'ms'
    """
    col = F.col(time) if isinstance(time, str) else time
    name = time if isinstance(time, str) else str(col)
    kind, unit, string = time_kind(column_type(df, time), name, time_unit)
    return EventTime(col, kind, unit, string)


def time_kind(dtype: T.DataType, name: str, time_unit: str | None = None
              ) -> tuple[Kind, TimeUnit | None, bool]:
    """What a time column of type ``dtype`` is: ``(kind, unit, string)`` as
    :class:`EventTime` holds them; raise ``ValueError`` naming ``time_unit`` or ``time`` if
    the column cannot be an event time (the one check :func:`event_time` and the SQL table
    functions make).

    Examples
    --------
    >>> time_kind(T.LongType(), "t", "ms"), time_kind(T.TimestampNTZType(), "t")
    (('integer', 'ms', False), ('wall_clock', None, False))
    >>> time_kind(T.DoubleType(), "t")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `time` must be a timestamp, ... or integer column; 't' is double
    """
    if time_unit is not None and time_unit not in TIME_UNITS:
        msg = f"`time_unit` must be one of {', '.join(TIME_UNITS)}; got {time_unit!r}"
        raise ValueError(msg)
    if isinstance(dtype, T.IntegralType):
        if time_unit is None:
            msg = (f"`time_unit` is required for the integer time column {name!r}: say whether "
                   "it counts 's', 'ms', 'us' or 'ns' since 1970 (dates written as yyyymmdd "
                   "integers must be converted to dates first, e.g. "
                   "to_date(cast(col AS string), 'yyyyMMdd'))")
            raise ValueError(msg)
        return "integer", time_unit, False
    if time_unit is not None:
        msg = (f"`time_unit` applies to integer time columns only; {name!r} is "
               f"{dtype.simpleString()}")
        raise ValueError(msg)
    if isinstance(dtype, (T.TimestampNTZType, T.DateType)):
        return "wall_clock", None, False
    if isinstance(dtype, T.TimestampType):
        return "instant", None, False
    if isinstance(dtype, T.StringType):
        return "instant", None, True
    msg = (f"`time` must be a timestamp, timestamp_ntz, date, timestamp string or integer "
           f"column; {name!r} is {dtype.simpleString()}")
    raise ValueError(msg)


def watermarked(df: DataFrame) -> str | None:
    """The column of ``df`` that carries its watermark, if it has one: the user's
    ``withWatermark``, or the event time of a windowkit output stream.

    Spark allows one watermark definition on a path (a second ``withWatermark`` after a
    stateful step fails with "Redefining watermark is disallowed"), so a step that needs one
    uses this one where it exists. Read from the schema's metadata, which a Connect session's
    schema carries too.

    Examples
    --------
    >>> stream = spark.readStream.format("rate").load()
    >>> watermarked(stream) is None, watermarked(stream.withWatermark("timestamp", "1 minute"))
    (True, 'timestamp')
    """
    if not df.isStreaming:
        return None
    return next((f.name for f in df.schema.fields if WATERMARK_METADATA in f.metadata), None)


def check_watermarkable(df: DataFrame, parameter: str) -> None:
    """Refuse, in one line, a stream a step needs a watermark on when Spark would refuse one:
    a windowkit output stream that carries none (frames with a ``schedule``, or outputs in
    ``timestamp_ntz`` or integer times), after whose stateful step Spark allows no
    ``withWatermark`` ("Redefining watermark is disallowed", once the query starts).

    Examples
    --------
    >>> check_watermarkable(spark.readStream.format("rate").load(), "df")  # no error
    """
    if not df.isStreaming or watermarked(df) is not None:
        return
    if any(NO_WATERMARK_METADATA in f.metadata for f in df.schema.fields):
        msg = (f"`{parameter}` is the stream of a windowkit step whose output carries no "
               "watermark (frames with a `schedule`, or times that are not timestamps), and "
               "Spark allows none after a stateful step: run this step on that step's stored "
               "output as a batch, or give that step timestamps and no `schedule`")
        raise ValueError(msg)
