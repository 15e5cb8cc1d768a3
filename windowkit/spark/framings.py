"""Boundary, delta, aggregate and custom frames on batch and streaming DataFrames; F2.

Each function runs a core framer (``windowkit.core.frames``) per key through the generic
adapter (``windowkit.spark.adapter.run_operator``) and returns threshold frames' columns:
the key columns (those of ``by``, each under its own name and type), ``frame_id``, ``start``,
``end``, ``last``, ``n_tuples``, ``n_missing``, ``status``, ``rejected`` and ``detail``. Rows
that cannot be framed (a null or unparsable time, a null in a key column) come out with
``rejected = "malformed"``, rows behind the watermark as ``"late"``, with the row as JSON in
``detail`` (:func:`windowkit.spark.split_rejected` separates them). A null, NaN or infinite
value is a *missing value* for the framing, not a bad row.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.durations import Duration
from windowkit.core.frames import (
    VALUE,
    AggregateFramer,
    BoundaryFramer,
    CustomFramer,
    DeltaFramer,
    Framing,
)
from windowkit.core.frames._engine import SequenceFramer, SequenceFrameSpec
from windowkit.spark.adapter import OperatorJob, run_operator
from windowkit.spark.event_time import TimeUnit, event_time
from windowkit.spark.frames import frame_spec, frames_projection
from windowkit.spark.keys import KeyLike, key_items


def boundary_frames(
    df: DataFrame,
    time: str | Column,
    value: str | Column,
    x: float,
    by: KeyLike = None,
    min_duration: str | int | Duration = "1 rows",
    missing: str = "unsatisfied",
    schedule: str | None = None,
    fragment_every: str | int | Duration | None = None,
    extent: str = "conservative",
    late: str | None = "1 minute",
    shards: int | None = None,
    time_unit: TimeUnit | None = None,
    duplicates: str = "keep",
) -> DataFrame:
    """Frames that change where ``value`` crosses a multiple of ``x``, per ``by`` key.

    Semantics: :class:`windowkit.core.frames.BoundaryFramer`.

    Parameters
    ----------
    df : DataFrame
        The readings (batch or streaming).
    time : str or Column
        Event time: a timestamp, ``timestamp_ntz`` (the wall-clock time it holds, whatever the
        session time zone), date or timestamp-string column, or an integer column with
        ``time_unit`` (see :mod:`windowkit.spark.event_time`).
    value : str or Column
        The attribute, a column name, Column or SQL expression (cast to double).
    x : float
        The boundary.
    by : str, Column or list of them, optional
        The key: a column name, a Column or a list of them (a composite key); frames per key.
    min_duration, missing, schedule, fragment_every, extent, duplicates
        As for the core framer (``duplicates``: ``"any"`` and ``"all"`` only for a framing
        of truth values, such as :class:`~windowkit.core.frames.ThresholdFraming`).
    late : str, optional
        Streaming only: watermark delay.
    shards : int, optional
        Spark groups the keys are hashed into (fixed for a streaming checkpoint's life).
    time_unit : {"s", "ms", "us", "ns"}, optional
        The unit of an integer ``time`` (required for one, refused for any other); output
        times are then integers in that unit.

    Returns
    -------
    DataFrame
        Threshold frames' columns (see the module docstring).

    Examples
    --------
    >>> df = spark.createDataFrame([("car", t, 0.3 * t) for t in range(10)],
    ...                            "id string, t long, mile double")
    >>> out = boundary_frames(df, "t", "mile", 1.0, by="id", time_unit="s")
    >>> [tuple(r) for r in out.select("start", "last", "end").orderBy("start").collect()]
    [(0, 3, 4), (4, 6, 7), (7, 9, 10)]
    """
    factory = boundary_operator(**locals())  # the parameters alone, as SQL calls it too
    return _frames(df, factory, time, value, by, late, shards, time_unit)


def delta_frames(
    df: DataFrame,
    time: str | Column,
    value: str | Column,
    x: float,
    by: KeyLike = None,
    min_duration: str | int | Duration = "1 rows",
    missing: str = "unsatisfied",
    schedule: str | None = None,
    fragment_every: str | int | Duration | None = None,
    extent: str = "conservative",
    late: str | None = "1 minute",
    shards: int | None = None,
    time_unit: TimeUnit | None = None,
    duplicates: str = "keep",
) -> DataFrame:
    """Frames whose values stay within ``max - min < x``, per ``by`` key (a partition).

    Semantics: :class:`windowkit.core.frames.DeltaFramer`; parameters as for
    :func:`boundary_frames`.

    Examples
    --------
    A freezer, frames closing when it drifts by 2 degrees:

    >>> temps = [-10.0, -9.5, -8.2, -8.0, -11.0, -10.5]
    >>> df = spark.createDataFrame([("f1", t, v) for t, v in enumerate(temps)],
    ...                            "freezer string, t long, temp double")
    >>> out = delta_frames(df, "t", "temp", 2.0, by="freezer", time_unit="s")
    >>> [tuple(r) for r in out.select("start", "last", "end").orderBy("start").collect()]
    [(0, 2, 3), (3, 3, 4), (4, 5, 6)]
    """
    factory = delta_operator(**locals())  # the parameters alone, as SQL calls it too
    return _frames(df, factory, time, value, by, late, shards, time_unit)


def aggregate_frames(
    df: DataFrame,
    time: str | Column,
    value: str | Column,
    func: str,
    op: str,
    x: float,
    by: KeyLike = None,
    min_duration: str | int | Duration = "1 rows",
    missing: str = "unsatisfied",
    schedule: str | None = None,
    fragment_every: str | int | Duration | None = None,
    extent: str = "conservative",
    late: str | None = "1 minute",
    shards: int | None = None,
    time_unit: TimeUnit | None = None,
    duplicates: str = "keep",
) -> DataFrame:
    """Frames by ``func(value) op x`` per ``by`` key: minimal for ``>``/``>=``, maximal for
    ``<``/``<=``.

    Semantics: :class:`windowkit.core.frames.AggregateFramer`; ``func`` is one of ``count``,
    ``sum``, ``mean``, ``min``, ``max``; other parameters as for :func:`boundary_frames`.

    Examples
    --------
    Section 3: frames of more than 100 vehicles.

    >>> counts = [40, 50, 30, 60, 45, 10]
    >>> df = spark.createDataFrame([("s1", 20 * i, c) for i, c in enumerate(counts)],
    ...                            "sensor string, t long, vehicles int")
    >>> out = aggregate_frames(df, "t", "vehicles", "sum", ">", 100, by="sensor", time_unit="s")
    >>> [tuple(r) for r in out.select("start", "last", "end").orderBy("start").collect()]
    [(0, 40, 60), (60, 80, 100)]
    """
    factory = aggregate_operator(**locals())  # the parameters alone, as SQL calls it too
    return _frames(df, factory, time, value, by, late, shards, time_unit,
                   presence_only=func == "count")


def boundary_operator(*, x: float, **params: object) -> functools.partial:
    """The operator factory :func:`boundary_frames` runs, from its parameters (keywords),
    checked (see :func:`~windowkit.spark.frames.frame_spec`).

    Examples
    --------
    >>> boundary_operator(x=0, min_duration="1 rows", missing="unsatisfied", schedule=None,
    ...                   fragment_every=None, extent="conservative", duplicates="keep")
    Traceback (most recent call last):
    ...
    ValueError: `x` must be a finite number > 0; got 0
    """
    return _checked(functools.partial(BoundaryFramer, x, spec=frame_spec(**params)))


def delta_operator(*, x: float, **params: object) -> functools.partial:
    """The operator factory :func:`delta_frames` runs, from its parameters (keywords)."""
    return _checked(functools.partial(DeltaFramer, x, spec=frame_spec(**params)))


def aggregate_operator(*, func: str, op: str, x: float, **params: object) -> functools.partial:
    """The operator factory :func:`aggregate_frames` runs, from its parameters (keywords)."""
    return _checked(functools.partial(AggregateFramer, func, op, x, spec=frame_spec(**params)))


def _checked(factory: functools.partial) -> functools.partial:
    factory()  # the framer checks its parameters: raise before Spark runs
    return factory


def custom_frames(
    df: DataFrame,
    time: str | Column,
    value: str | Column,
    framing: Framing,
    by: KeyLike = None,
    min_duration: str | int | Duration = "1 rows",
    missing: str = "unsatisfied",
    schedule: str | None = None,
    fragment_every: str | int | Duration | None = None,
    extent: str = "conservative",
    late: str | None = "1 minute",
    shards: int | None = None,
    time_unit: TimeUnit | None = None,
    duplicates: str = "keep",
) -> DataFrame:
    """Frames of a user's :class:`~windowkit.core.frames.Framing`, per ``by`` key.

    The framing's class must be importable by Spark's Python workers (defined in a module,
    not in ``__main__``). Other parameters as for :func:`boundary_frames`.

    Examples
    --------
    Appendix B's F3: maximal periods of increasing temperature over at least three reports.

    >>> from windowkit.core.frames import IncreasingTrend
    >>> temps = [30, 31, 33, 34, 30, 34, 33, 34, 35, 32]
    >>> df = spark.createDataFrame([("s1", t, x) for t, x in enumerate(temps, 1)],
    ...                            "sensor string, t long, temp int")
    >>> out = custom_frames(df, "t", "temp", IncreasingTrend(), by="sensor",
    ...                     min_duration="3 rows", time_unit="s")
    >>> [tuple(r) for r in out.select("start", "last", "end").orderBy("start").collect()]
    [(1, 4, 5), (7, 9, 10)]
    """
    if not isinstance(framing, Framing):
        msg = f"`framing` must be a windowkit Framing; got {type(framing).__name__}"
        raise ValueError(msg)
    spec = SequenceFrameSpec.create(min_duration, missing, schedule, fragment_every, extent,
                                    duplicates)
    CustomFramer(framing, spec=spec)  # validate (e.g. fragments of a minimal framing)
    factory = functools.partial(CustomFramer, framing, spec=spec)
    return _frames(df, factory, time, value, by, late, shards, time_unit)


def longest_frame(frames: DataFrame, by: str | None = None) -> DataFrame:
    """Appendix B's F2: the longest final frames (``last - start``), per ``by`` or overall.

    F2 is not computable on an unbounded stream ("the existence of a frame is not definite
    until all the input has been seen"): ``frames`` must be a batch DataFrame, the output of
    any frames function on a bounded input. Ties keep every frame of the maximum length.

    Parameters
    ----------
    frames : DataFrame
        Frames (``start``, ``last``, ``status`` columns); partial and rejected rows are ignored.
    by : str, Column or list of them, optional
        The key columns of ``frames`` (names, as the frames function gave them, or Columns of
        ``frames``): the longest frames of each key; None for the longest overall.

    Returns
    -------
    DataFrame
        The longest final frames.

    Raises
    ------
    ValueError
        On a streaming DataFrame.

    Examples
    --------
    >>> from windowkit.spark import threshold_frames
    >>> temps = [30, 31, 33, 34, 30, 34, 33, 34, 35, 32]
    >>> df = spark.createDataFrame([("s1", t, x) for t, x in enumerate(temps, 1)],
    ...                            "sensor string, s long, temp int")
    >>> df = df.withColumn("t", F.timestamp_seconds("s"))
    >>> f2 = longest_frame(threshold_frames(df, "t", "temp > 32", by="sensor"), by="sensor")
    >>> f2.select("n_tuples").collect()
    [Row(n_tuples=4)]
    """
    if frames.isStreaming:
        msg = ("`frames` is a streaming DataFrame: the longest frame (Appendix B's F2) is "
               "known only once the input has ended; run longest_frame on a batch DataFrame "
               "(e.g. the frames written by a stream, read back as a table)")
        raise ValueError(msg)
    final = frames.filter(F.col("status") == "final")
    length = _as_long(final, "last") - _as_long(final, "start")
    final = final.withColumn("wk_length", length)
    keys = key_items(by)
    window = Window.partitionBy(*keys) if keys else Window.partitionBy(F.lit(0))
    best = final.withColumn("wk_best", F.max("wk_length").over(window))
    return best.filter(F.col("wk_length") == F.col("wk_best")).drop("wk_length", "wk_best")


def _as_long(df: DataFrame, name: str) -> Column:
    """A frame time as a number lengths are compared in: µs, or the integers themselves
    (frames of integer times are in one unit, whichever it is)."""
    integer = isinstance(df.schema[name].dataType, T.IntegralType)
    return event_time(df, name, "us" if integer else None).micros()


def _frames(
    df: DataFrame,
    factory: Callable[[], SequenceFramer],
    time: str | Column,
    value: str | Column,
    by: KeyLike,
    late: str | None,
    shards: int | None,
    time_unit: TimeUnit | None,
    presence_only: bool = False,
) -> DataFrame:
    """Run ``factory``'s framer over ``df``; the shared output of every framing
    (``presence_only``: the framer reads only whether each value is known)."""
    # a value that is not a number ('n/a') is a missing value, as null is, in every ANSI mode
    value_col = (F.expr(value) if isinstance(value, str) else value).try_cast("double")
    if presence_only:
        # A count reads only which values are known: a finite value travels as 1.0, which
        # the shuffle compresses away, and a missing one (null, NaN, ±inf) as it is.
        # count >= 15 on 10 M rows: 3.55 -> 3.1 s, half the bytes shuffled.
        value_col = F.when(F.abs(value_col) < F.lit(float("inf")), F.lit(1.0)).otherwise(
            value_col)
    job = OperatorJob(factory=factory, inputs={VALUE: value_col})
    # the adapter reads the time column (and an integer one's unit) and gives the frames'
    # times back in the column's own kind
    return run_operator(df, job, time=time, key=by, shards=shards, late=late,
                        time_unit=time_unit, project=frames_projection)


def framing_functions() -> dict[str, Any]:
    """The frames functions of this module by kind (for the CLI's ``--kind``).

    Examples
    --------
    >>> sorted(framing_functions())
    ['aggregate', 'boundary', 'custom', 'delta']
    """
    return {"boundary": boundary_frames, "delta": delta_frames,
            "aggregate": aggregate_frames, "custom": custom_frames}
