"""``widen_detect``: progressive window widening on batch and streaming DataFrames."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.widening import (
    Detector,
    EpisodeDetector,
    WideningConfig,
    WindowWidening,
)
from windowkit.core.widening.config import ReportMode
from windowkit.spark.adapter import (
    DETAIL_OUT,
    REJECTED,
    OperatorJob,
    named,
    run_operator,
    user_column,
)
from windowkit.spark.columns import quoted_name
from windowkit.spark.event_time import EventTime, TimeUnit, event_time
from windowkit.spark.keys import KeyLike, resolve_key
from windowkit.spark.rejected import deprecated_splitter

TIME_COLUMNS = ("window_start", "window_end", "detected_at", "first_time", "last_time")


def widen_detect(
    df: DataFrame,
    time: str | Column,
    by: KeyLike = None,
    detector: Detector | str = "remote-shell",
    base: str | int | dt.timedelta = "1 second",
    max_length: int = 32,
    max_duration: str | int | dt.timedelta | None = None,
    levels: int | None = None,
    report: ReportMode = "first",
    late: str | None = "1 minute",
    shards: int | None = None,
    time_unit: TimeUnit | None = None,
) -> DataFrame:
    """Run a detector over sliding windows of doubling duration, per ``by`` key (PWW).

    Works on batch and streaming DataFrames alike, with the semantics of
    :class:`windowkit.core.widening.WindowWidening`: level-k windows of two batches of
    ``base * 2**k``, at most ``4 * max_length`` rows each (the middle of long batches dropped),
    every pattern of at most ``max_length`` rows of a key and at most ``max_duration`` long
    inside some window; a window is given to the detector once the watermark passes its end,
    and each match is reported once, at its first detection (``report="first"``).

    Parameters
    ----------
    df : DataFrame
        The events.
    time : str or Column
        Event time: a timestamp, ``timestamp_ntz`` (the wall-clock time it holds, whatever the
        session time zone), date or timestamp-string column, or an integer column with
        ``time_unit`` (see :mod:`windowkit.spark.event_time`).
    by : str, Column or list of them, optional
        The key (e.g. a process id): a column name, a Column or a list of them (a composite
        key, e.g. host and process id); patterns are sought per key, and each key column
        comes first in the output under its own name and type.
    detector : Detector or str
        A :class:`~windowkit.core.widening.Detector`, or an episode in the text form of
        :mod:`windowkit.core.widening.episode` (``"remote-shell"`` for the paper's). An episode
        reads the columns ``call``, ``ret`` and those named by its arguments, compared as text;
        a column the DataFrame lacks is null.
    base : str, int or timedelta
        Base batch duration ``d0``.
    max_length : int
        ``L``: the most rows of a key a pattern spans.
    max_duration, levels
        The longest pattern duration to cover, or the number of levels (exactly one).
    report : {"first", "all"}
        Each match once, at its first detection, or in every window that finds it.
    late : str, optional
        Streaming only: how late a row may arrive (watermark delay); later rows come out as
        ``late``.
    shards : int, optional
        Spark groups the keys are hashed into (default one per core on a batch,
        ``spark.sql.shuffle.partitions`` on a stream); keep
        it fixed across restarts of a streaming query.
    time_unit : {"s", "ms", "us", "ns"}, optional
        What an integer ``time`` counts, for adapters that ask for it; the time columns of the
        result are then integers in the same unit.

    Returns
    -------
    DataFrame
        One row per detection: the key (named after ``by``), ``level``, ``window_start``,
        ``window_end``, ``detected_at``, ``first_time``, ``last_time``, ``span`` (µs),
        ``times`` (array of the matched rows' times, in the detector's order), ``ordinals``
        (array: each row's rank among the key's rows with the same time), ``rejected``
        (null, or ``malformed``/``late`` for rows that could not be used, with the row as JSON
        in ``detail``). Use :func:`windowkit.spark.split_rejected` to separate them.

    Examples
    --------
    The paper's remote shell in process 7, its steps spread over 20 seconds:

    >>> from datetime import datetime, timedelta
    >>> t0 = datetime(2026, 1, 1)
    >>> rows = [(7, 0, "accept", "3", None, "4"), (7, 3, "dup", "4", None, "0"),
    ...         (7, 5, "dup", "4", None, "1"), (7, 9, "dup", "4", None, "2"),
    ...         (7, 20, "execve", None, "/bin/sh", "0")]
    >>> df = spark.createDataFrame([(p, t0 + timedelta(seconds=s), *rest)
    ...                             for p, s, *rest in rows],
    ...                            "pid long, t timestamp, call string, fd string, "
    ...                            "exe string, ret string")
    >>> out = widen_detect(df, "t", by="pid", base="4 seconds", max_length=8,
    ...                    max_duration="1 minute")
    >>> out.select("pid", "level", "span", "rejected").show()
    +---+-----+--------+--------+
    |pid|level|    span|rejected|
    +---+-----+--------+--------+
    |  7|    2|20000000|    NULL|
    +---+-----+--------+--------+
    <BLANKLINE>
    """
    factory = widen_operator(**locals())  # the parameters alone, as SQL calls it too
    detector = factory.args[0]
    key = resolve_key(df, by)
    wanted = T.StringType() if _textual(detector) else T.LongType()
    inputs = {}
    for name, present in _detector_columns(detector, df.columns, "the DataFrame").items():
        if present:
            # a column already of the type goes as it is, so that it also carries a stream's
            # late rows' copy of itself
            column = user_column(name)
            inputs[name] = column if df.schema[name].dataType == wanted else column.cast(wanted)
        else:
            inputs[name] = F.lit(None).cast("string")
    job = OperatorJob(factory=factory, inputs=inputs)
    return run_operator(df, job, time=time, key=key, shards=shards, late=late,
                        time_unit=time_unit,
                        project=_detections_projection(event_time(df, time, time_unit)))


def widen_operator(*, detector: Detector | str = "remote-shell",
                   base: str | int | dt.timedelta = "1 second", max_length: int = 32,
                   max_duration: str | int | dt.timedelta | None = None,
                   levels: int | None = None, report: ReportMode = "first",
                   **_: object) -> functools.partial:
    """The operator factory :func:`widen_detect` runs, from its parameters (keywords; the
    others are ignored), checked as the function checks them: also its SQL table function's.

    Examples
    --------
    >>> widen_operator(base="4 seconds", max_length=16, levels=3)().input_schema[:2]
    [('call', 'category'), ('ret', 'category')]
    """
    config = WideningConfig.create(base, max_length, max_duration, levels, report)
    if isinstance(detector, str):
        detector = EpisodeDetector(detector)
    if not isinstance(detector, Detector):
        msg = (f"`detector` must be a Detector or an episode's text; got "
               f"{type(detector).__name__}")
        raise ValueError(msg)
    return functools.partial(WindowWidening, detector, config=config)


def detector_inputs(operator: WindowWidening, *, table: T.StructType, **_: object
                    ) -> dict[str, str]:
    """The detector's columns as SQL over the ``table``, as :func:`widen_detect` takes them
    (a text column the table lacks is null), for its SQL table function.

    Examples
    --------
    >>> texts = detector_inputs(widen_operator(levels=3)(),
    ...                         table=T.StructType.fromDDL("t long, call string"))
    >>> texts["call"], texts["ret"]
    ('`call`', 'CAST(NULL AS STRING)')
    """
    present = _detector_columns(operator.detector, table.names, "the table")
    return {name: quoted_name(name) if there else "CAST(NULL AS STRING)"
            for name, there in present.items()}


def _textual(detector: Detector) -> bool:
    return detector.column_type in ("category", "string")


def _detector_columns(detector: Detector, columns: list[str], holder: str) -> dict[str, bool]:
    """Each column the detector reads -> whether ``columns`` (those of ``holder``) has it; a
    text column it lacks is read as null, any other is refused."""
    present = {name: name in columns for name in detector.columns}
    missing = [name for name, there in present.items() if not there]
    if missing and not _textual(detector):
        msg = f"the detector needs column {missing[0]!r}; {holder} has {list(columns)}"
        raise ValueError(msg)
    return present


def detection_columns(operator: WindowWidening, **_: object) -> list:
    """:func:`widen_detect`'s columns as its projection makes them (the episode's times and
    ordinals as arrays), for its SQL table function.

    Examples
    --------
    >>> columns = detection_columns(widen_operator(levels=3)())
    >>> [c if isinstance(c, str) else c[0] for c in columns][-4:]
    ['times', 'ordinals', 'rejected', 'detail']
    """
    def numbers(name: str):
        return lambda part: [None if text is None or pd.isna(text)
                             else [int(x) for x in text.split(",")] for text in part[name]]

    return ["level", *TIME_COLUMNS[:3], "first_time", "last_time", "span",
            ("times", numbers("times"), ("array", "timestamp")),
            ("ordinals", numbers("ordinals"), ("array", "int64")), REJECTED, DETAIL_OUT]


def _detections_projection(clock: EventTime
                           ) -> Callable[[dict[str, Column | str]], list[Column | str]]:
    """The adapter's projection to detections (after the key columns, which the adapter
    puts first): the episode's times (text of microseconds, restored to the kind of ``clock``) and
    ordinals (text) as arrays; the window and detection times the adapter restored already."""
    micros = F.transform(F.split(F.col("times"), ","), lambda x: x.cast("long"))
    times = F.when(F.col("times").isNotNull(), F.transform(micros, clock.restore))
    ordinals = F.when(F.col("ordinals").isNotNull(), F.transform(
        F.split(F.col("ordinals"), ","), lambda x: x.cast("long")))
    made = {"times": times.alias("times"), "ordinals": ordinals.alias("ordinals")}

    def project(columns: dict[str, Column | str]) -> list[Column | str]:
        names = ["level", *TIME_COLUMNS[:3], "first_time", "last_time", "span", "times",
                 "ordinals", REJECTED, DETAIL_OUT]
        return [*[made.get(name, named(name, columns[name])) for name in names]]

    return project


#: Deprecated: :func:`windowkit.spark.split_rejected` splits every function's output.
split_detections = deprecated_splitter("split_detections")

