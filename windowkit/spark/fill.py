"""``fill_frames``: attach or aggregate the rows of another DataFrame in each frame (Def. 6).

A frame filling takes a filler S' (the same stream, another stream, or a stored table), the
framing modified by g, and a query Q. Here g shifts each frame to ``[start - before,
end + after)`` (a partial fragment, which has no ``end`` yet, covers ``[start - before,
last + after]``), and Q attaches the filler rows that fall in it, or aggregates them.

* Batch: an equi-join on time *buckets*, not a range join: each frame is exploded into the
  buckets its shifted interval touches, each filler row falls in one bucket, and the join on
  ``(key, bucket)`` is then filtered by the exact interval. A frame meets only the rows of
  nearby buckets, so the cost grows with rows and frame lengths, not with rows × frames.
* Streaming frames and a stored table (batch ``data``): a stream-static join of each frame
  row (partial fragments included, as they come) with the table.
* Streaming frames and a streaming filler: the paper's Between-Join, a stream-stream join on
  the time range with watermarks on both sides. A filler row leaves Spark's join state once
  the watermark passes ``time + max_frame_length + before`` (a frame can claim it no later),
  a fragment once the watermark passes its interval's end. Filler rows behind the watermark
  cannot be joined: Spark drops and counts them (:func:`late_filler_rows` reads the count).

Every filler row is accounted for: one with a null ``by`` key or a null or unparsable time
belongs to no frame and comes out as a row of the result with ``rejected = "malformed"`` and
the row as JSON in ``detail`` (:func:`windowkit.spark.split_rejected` separates them), on a
batch and on a streaming filler alike. A stored filler table under streaming frames is read
again by every micro-batch: its rejected rows are :func:`rejected_filler_rows` of it, once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import reduce
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.durations import to_micros
from windowkit.spark.adapter import DETAIL_OUT, REJECTED, row_json
from windowkit.spark.columns import ColumnLike, quoted
from windowkit.spark.event_time import (
    EventTime,
    TimeUnit,
    check_watermarkable,
    event_time,
    floor_div,
    watermarked,
)
from windowkit.spark.keys import Key, KeyLike, key_items, resolve_key
from windowkit.spark.rejected import deprecated_splitter

_LO, _HI, _BUCKET, _T, _FT = "wk_lo", "wk_hi", "wk_bucket", "wk_t", "wk_frame_time"
#: The key columns of the join, numbered: the frames' and the filler's.
_FRAME_KEY, _FILLER_KEY = "wk_frame_key_", "wk_filler_key_"


def fill_frames(
    frames: DataFrame,
    data: DataFrame,
    time: ColumnLike,
    by: KeyLike = None,
    before: str = "30 seconds",
    after: str = "0 seconds",
    aggregates: Mapping[str, Column] | Sequence[Column] | None = None,
    statuses: Sequence[str] = ("final",),
    bucket: str = "1 minute",
    max_frame_length: str = "1 hour",
    late: str = "1 minute",
    time_unit: TimeUnit | None = None,
) -> DataFrame:
    """Fill frames with the rows of ``data`` in ``[start - before, end + after)``.

    Parameters
    ----------
    frames : DataFrame
        Output of a frames function (``start``, ``end``, ``last``, ``status``, ...), batch or
        streaming; rows whose status is not in ``statuses`` are ignored.
    data : DataFrame
        The filler rows: the same stream, another stream, or a stored table.
    time : str or Column
        The filler's event time, a column name of ``data`` or an expression of its columns:
        a timestamp, ``timestamp_ntz``, date or timestamp string, or an integer with
        ``time_unit`` (see :mod:`windowkit.spark.event_time`).
    by : str, Column or list of them, optional
        The key: each frame gets only the rows of its own key. A list is a composite key
        (each frame gets the rows equal to it in every key column). Each key column is
        evaluated on ``data`` (a Column is an expression of ``data``'s columns); on
        ``frames`` it is the column of the same name, the name Spark gives it in a
        ``select`` (``router``, ``lower(host)``: the column a windowkit frames function keyed
        by the same ``by`` outputs), else the same expression evaluated on ``frames``.
        A filler row with a null in a key column has no key: it is rejected as
        ``malformed``. None fills every frame with the rows of all keys.
    before, after : str
        How far the interval reaches before ``start`` and after ``end`` (``"0 seconds"`` for
        none).
    aggregates : dict of str to Column, or list of Column, optional
        Aggregate expressions over the filler's columns (e.g. ``{"n": F.count("x")}``): one
        row per frame, frames without rows included (``count`` gives 0, others null). None
        attaches the rows: one output row per (frame, filler row).
    statuses : sequence of str
        Which frame rows to fill: ``("final",)`` (default), or ``("partial", "final")`` to
        fill fragments as they come on a stream.
    bucket : str
        Batch and stream-static: the width of the time buckets of the join.
    max_frame_length : str
        Stream-stream only: the longest shifted frame interval; filler rows older than the
        watermark by more than this are dropped from the join's state.
    late : str
        Streaming only: watermark delay of the frames and of a streaming filler; one that
        has a watermark already (a windowkit output stream, or the user's
        ``withWatermark``) keeps it.
    time_unit : {"s", "ms", "us", "ns"}, optional
        The unit of integer times (frames' and filler's): required for an integer ``time``,
        refused for any other.

    Returns
    -------
    DataFrame
        The frames' columns (their ``rejected`` and ``detail`` dropped; they keep their key
        columns) and the filler's (its columns named as a key column dropped; names the frames
        also have get a ``filler_`` prefix), or with
        ``aggregates`` the frames' columns and one column per aggregate; then ``rejected``
        (``malformed`` for a filler row with a null key or a null or unparsable time, else
        null) and ``detail`` (that row as JSON). A rejected row has no frame: its other
        columns are null. Filler rows behind the watermark of a stream-stream fill are dropped
        by Spark's join and counted by :func:`late_filler_rows`.

    Examples
    --------
    >>> frames = spark.createDataFrame([("r1", 0, 100, 200, 150, "final")],
    ...     "router string, frame_id long, start long, end long, last long, status string")
    >>> bgp = spark.createDataFrame([("r1", t) for t in (60, 75, 120, 199, 200, 250)],
    ...                             "router string, t long")
    >>> out = fill_frames(frames, bgp, "t", by="router", aggregates={"n": F.count("t")},
    ...                   time_unit="s")
    >>> out.select("frame_id", "n", "rejected").collect()
    [Row(frame_id=0, n=3, rejected=None)]

    A key of the filler's own form: ``lower(router)`` is an expression of ``data``, and the
    frames, which have no column of that name, are keyed by the same expression of theirs:

    >>> upper = bgp.withColumn("router", F.upper("router"))
    >>> fill_frames(frames, upper, "t", by=F.lower("router"), aggregates={"n": F.count("t")},
    ...             time_unit="s").select("frame_id", "n").collect()
    [Row(frame_id=0, n=3)]
    """
    before_us = _micros_or_zero(before, "before")
    after_us = _micros_or_zero(after, "after")
    bucket_us = to_micros(bucket, "bucket")
    missing = [c for c in ("start", "end", "last", "status") if c not in frames.columns]
    if missing:
        msg = f"`frames` must have columns start, end, last, status; missing {missing}"
        raise ValueError(msg)
    if isinstance(time, str) and time not in data.columns:
        msg = f"`time` must be a column of `data`; got {time!r} (columns: {data.columns})"
        raise ValueError(msg)
    # time and key resolved on the caller's columns, before a column of windowkit's own
    clock = event_time(data, time, time_unit)
    key, on_data, on_frames = _keys(frames, data, by)
    check_watermarkable(frames, "frames")
    check_watermarkable(data, "data")
    if data.isStreaming and not frames.isStreaming:
        msg = ("`data` is streaming but `frames` is not: read the frames as a stream too, or "
               "fill the stored frames from the filler's stored rows")
        raise ValueError(msg)

    frame_cols = [c for c in frames.columns if c not in (REJECTED, DETAIL_OUT)]
    renamed = {c: f"filler_{c}" for c in data.columns
               if c in (*frame_cols, REJECTED, DETAIL_OUT) and c not in key.names}
    filler_cols = [renamed.get(c, c) for c in data.columns if c not in key.names]
    fr = frames.filter(F.col("status").isin(*statuses)).select(*frame_cols)
    start, end, last = (_micros(frames, c, time_unit) for c in ("start", "end", "last"))
    fr = fr.withColumns({_LO: start - F.lit(before_us),
                         _HI: F.coalesce(end, last + F.lit(1)) + F.lit(after_us),
                         **_numbered(_FRAME_KEY, on_frames)})
    # the key and the time computed before any filler column is renamed
    dt = data.withColumns({_T: clock.micros(), **_numbered(_FILLER_KEY, on_data)})
    for old, new in renamed.items():
        dt = dt.withColumnRenamed(old, new)
    dt = dt.drop(*[c for c in key.names if c in data.columns])
    same_key = _same_key(fr, dt, len(on_data))

    if frames.isStreaming and data.isStreaming:
        joined = _between_join(fr, dt, same_key, before_us, max_frame_length, late)
    else:
        if frames.isStreaming:
            fr = _frame_time(fr, frames, late)
        joined = _bucket_join(fr, dt, same_key, bucket_us)
    filled = _filled(joined, fr, data, frame_cols, filler_cols, aggregates)
    accepted = filled.withColumns({REJECTED: F.lit(None).cast("string"),
                                   DETAIL_OUT: F.lit(None).cast("string")})
    if data.isStreaming != frames.isStreaming:
        return accepted  # a stored table's rejected rows: rejected_filler_rows(data, ...)
    rejected = _rejected(data, clock, key)
    return accepted.unionByName(_padded(rejected, filled))


#: Deprecated: :func:`windowkit.spark.split_rejected` splits every function's output.
split_filled = deprecated_splitter("split_filled")


def rejected_filler_rows(data: DataFrame, time: ColumnLike, by: KeyLike = None,
                         time_unit: TimeUnit | None = None) -> DataFrame:
    """The filler rows :func:`fill_frames` sets aside: ``rejected`` and ``detail``.

    A stored table filling streaming frames is read again by every micro-batch, so its
    rejected rows are not repeated in the stream's result: this gives them, once. ``time``
    and ``by`` are those given to :func:`fill_frames` (names or Columns of ``data``, ``by``
    a list of them for a composite key).

    Examples
    --------
    >>> bgp = spark.createDataFrame([("r1", 120), (None, 130)], "router string, t long")
    >>> rejected_filler_rows(bgp, "t", by="router", time_unit="s").collect()
    [Row(rejected='malformed', detail='{"t":130}')]
    """
    clock = event_time(data, time, time_unit)
    return _rejected(data, clock, resolve_key(data, by))


def late_filler_rows(query: Any) -> int:
    """Filler rows a streaming fill dropped because they came behind the watermark.

    Spark counts them per stateful operator (``numRowsDroppedByWatermark``); this sums the
    counts over the query's recent progress reports.

    Examples
    --------
    >>> class Query:
    ...     recentProgress = [{"stateOperators": [{"numRowsDroppedByWatermark": 2}]}]
    >>> late_filler_rows(Query())
    2
    """
    total = 0
    for progress in query.recentProgress:
        report = progress if isinstance(progress, dict) else progress.json_dict()
        for op in report.get("stateOperators", []):
            total += int(op.get("numRowsDroppedByWatermark", 0))
    return total


def _keys(frames: DataFrame, data: DataFrame, by: KeyLike
          ) -> tuple[Key, list[Column], list[Column]]:
    """``by`` resolved on ``data``, and each of its key columns on ``data`` and on ``frames``
    (the column of the name Spark gives it, else its expression evaluated on ``frames``).

    A name either lacks is refused in one line naming what each lacks (checked against their
    columns: Spark logs every failed analysis, even one caught); a Column that does not
    resolve on ``data`` fails with Spark's own error, one that does not on ``frames`` in one
    line.
    """
    names = [c for c in key_items(by) if isinstance(c, str)]
    has = {"frames": set(frames.columns), "data": set(data.columns)}
    lacking = {side: [repr(n) for n in names if n not in columns]
               for side, columns in has.items()}
    if lacking["frames"] or lacking["data"]:
        raise ValueError(_missing_key(frames, data, by, lacking))
    key = resolve_key(data, by)  # a ValueError for a `by` of a wrong type
    on_data = list(key.columns)
    own = [name in has["frames"] for name in key.names]  # a column of frames of that name
    on_frames = [quoted(name) if mine else column
                 for name, column, mine in zip(key.names, on_data, own, strict=True)]
    evaluated = [c for c, mine in zip(on_frames, own, strict=True) if not mine]
    try:
        if evaluated:  # analysed now, not when the job runs
            frames.select(*evaluated).schema  # noqa: B018
    except AnalysisException:
        # each named as Spark names it on data
        lacking["frames"] = [repr(name) for name, column, mine
                             in zip(key.names, on_data, own, strict=True)
                             if not mine and not _resolves(frames, column)]
        raise ValueError(_missing_key(frames, data, by, lacking)) from None
    return key, on_data, on_frames


def _missing_key(frames: DataFrame, data: DataFrame, by: KeyLike,
                 lacking: dict[str, list[str]]) -> str:
    """The one-line error for key columns ``frames`` or ``data`` lacks."""
    where = "; ".join(f"`{side}` lacks {', '.join(items)} (its columns: {df.columns})"
                      for (side, items), df in zip(lacking.items(), (frames, data), strict=True)
                      if items)
    return f"`by` must be a column of both `frames` and `data`; got {by!r}: {where}"


def _resolves(df: DataFrame, column: Column) -> bool:
    try:
        df.select(column).schema  # noqa: B018 -- the analysis is the question
    except AnalysisException:
        return False
    return True


def _numbered(prefix: str, columns: list[Column]) -> dict[str, Column]:
    return {f"{prefix}{i}": column for i, column in enumerate(columns)}


def _same_key(fr: DataFrame, dt: DataFrame, n: int) -> Column | None:
    """Equal keys of a frame and a filler row, in every key column (None for no key)."""
    pairs = [fr[f"{_FRAME_KEY}{i}"] == dt[f"{_FILLER_KEY}{i}"] for i in range(n)]
    return reduce(lambda a, b: a & b, pairs) if pairs else None


def _bucket_join(fr: DataFrame, dt: DataFrame, same_key: Column | None, bucket_us: int
                 ) -> DataFrame:
    """Equi-join on (key, time bucket), then the exact interval."""
    first = floor_div(F.col(_LO), bucket_us)
    final = floor_div(F.col(_HI) - F.lit(1), bucket_us)
    fr = fr.withColumn(_BUCKET, F.explode(F.sequence(first, F.greatest(first, final))))
    dt = dt.withColumn(_BUCKET, floor_div(F.col(_T), bucket_us))
    on = fr[_BUCKET] == dt[_BUCKET]
    if same_key is not None:
        on = on & same_key
    on = on & (dt[_T] >= fr[_LO]) & (dt[_T] < fr[_HI])
    return fr.join(dt, on, "inner")


def _between_join(fr: DataFrame, dt: DataFrame, same_key: Column | None, before_us: int,
                  max_frame_length: str, late: str) -> DataFrame:
    """Stream-stream join on the time range; watermarks bound both sides' state."""
    longest = to_micros(max_frame_length, "max_frame_length")
    fr = _frame_time(fr, fr, late)
    dt = dt.withColumn("wk_filler_time", F.timestamp_micros(F.col(_T)))
    if watermarked(dt) is None:
        dt = dt.withWatermark("wk_filler_time", late)
    on = (dt["wk_filler_time"] < fr[_FT]) & (
        dt["wk_filler_time"] >= fr[_FT] - F.expr(f"INTERVAL {longest + before_us} MICROSECONDS"))
    if same_key is not None:
        on = on & same_key
    on = on & (dt[_T] >= fr[_LO]) & (dt[_T] < fr[_HI])
    return fr.join(dt, on, "inner")


def _frame_time(fr: DataFrame, frames: DataFrame, late: str) -> DataFrame:
    """Streaming frames with their interval's end as a timestamp, the frames' watermark.

    Frames that carry a watermark already (a windowkit output stream, or the user's
    ``withWatermark``) keep it: Spark refuses a second definition after a stateful step,
    and ``late`` is then not used for them.
    """
    fr = fr.withColumn(_FT, F.timestamp_micros(F.col(_HI)))
    return fr if watermarked(frames) is not None else fr.withWatermark(_FT, late)


def _empty_aggregates(data: DataFrame, exprs: list[Column], names: list[str]) -> DataFrame:
    """One row: the aggregates over no rows (counts 0, others null)."""
    return data.limit(0).agg(*exprs).select(*names) if names else data.limit(0).agg(*exprs)


def _filled(joined: DataFrame, fr: DataFrame, data: DataFrame, frame_cols: list[str],
            filler_cols: list[str], aggregates: Mapping[str, Column] | Sequence[Column] | None
            ) -> DataFrame:
    """The joined rows, or with ``aggregates`` one row per frame (frames without rows too)."""
    if aggregates is None:
        return joined.select(*frame_cols, *filler_cols)
    exprs = (list(aggregates) if not isinstance(aggregates, Mapping)
             else [col.alias(name) for name, col in aggregates.items()])
    if fr.isStreaming:
        # one group per frame row, settled when the watermark passes the interval's end
        return joined.groupBy(*frame_cols, _FT).agg(*exprs).drop(_FT)
    counted = joined.groupBy(*frame_cols).agg(*exprs)
    # frames without any row: present, with the aggregates of an empty set
    empty = fr.select(*frame_cols).join(counted.select(*frame_cols), frame_cols, "left_anti")
    names = [c for c in counted.columns if c not in frame_cols]
    zero = _empty_aggregates(data, exprs, names)
    return counted.unionByName(empty.crossJoin(zero))


def _rejected(data: DataFrame, clock: EventTime, key: Key) -> DataFrame:
    """The filler rows no frame can take (no key, no time), as ``rejected`` and ``detail``."""
    bad = clock.micros().isNull() | key.missing
    return data.filter(bad).select(F.lit("malformed").alias(REJECTED),
                                   row_json(data).alias(DETAIL_OUT))


def _padded(rejected: DataFrame, like: DataFrame) -> DataFrame:
    """``rejected`` with ``like``'s columns, null, before its own two."""
    return rejected.select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in like.schema],
                           REJECTED, DETAIL_OUT)


def _micros(df: DataFrame, name: str, time_unit: str | None) -> Column:
    """A frame time in µs: an integer one in ``time_unit`` (the filler's), any other kind as
    :func:`~windowkit.spark.event_time.event_time` reads it."""
    return event_time(df, name, time_unit if _is_integer(df, name) else None).micros()


def _is_integer(df: DataFrame, name: str) -> bool:
    return isinstance(df.schema[name].dataType, T.IntegralType)


def _micros_or_zero(value: str | int, name: str) -> int:
    if isinstance(value, str) and value.strip().split(" ")[0] in ("0", "0.0"):
        return 0
    if value == 0:
        return 0
    return to_micros(value, name)
