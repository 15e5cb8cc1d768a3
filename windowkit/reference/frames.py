"""Brute-force threshold frames: the oracle for ``windowkit.core.frames``.

Written straight from the threshold-frames specification (the frames paper, section 4.3 and
appendices B, C, F; the specification below is how we read it), one key at a time, one element
at a time, with plain Python lists. It is meant to be obviously right, not fast.

The specification, for one key's stream (times are int64 microseconds; a *value* is ``1`` when
the predicate holds, ``0`` when it does not, ``-1`` when it is missing/unknown):

* Rows are taken in time order. Rows of one key at the same time (the paper assumes there are
  none) are all reports, taken in the order unsatisfied, missing, satisfying, whatever their
  input order (``duplicates="keep"``); or they are one report, which holds if any of them holds
  (``"any"``: else missing if one is missing, else not holding) or only if all of them hold
  (``"all"``: else not holding if one does not hold, else missing).
* With a reporting *schedule* of period ``P``, between consecutive rows at ``a < b`` there are
  ``m = max(0, (2 * (b - a) + P) // (2 * P) - 1)`` virtual absent reports (value ``-1``) at
  ``a + j * P`` for ``j = 1..m``; none before the first row; and at end of input one more
  virtual absent report at ``last_row_time + P``.
* A ``0`` always separates; a ``-1`` separates under ``missing="unsatisfied"`` and is bridged
  under ``missing="satisfying"``. Each segment between separators, with its leading and trailing
  ``-1`` dropped, is a candidate frame if anything remains.
* ``end`` is the time of the element right after the frame's last element in the expanded
  sequence, or ``last + 1`` when nothing follows (no schedule, end of input).
* Candidates shorter than ``min_duration`` (``n_tuples`` for rows, ``last - start`` for time)
  are dropped; a survivor's ``frame_id`` is the time of its first row (:func:`next_frame_id`:
  one past the key's previous id if frames start at one instant).
* With ``fragment_every`` ``F``, partial rows are emitted at the *anchor* (the first ``1``
  element where the frame so far reaches ``min_duration``) and then at the first ``1`` element
  crossing each further multiple of ``F`` past the anchor (one row per element).
"""

from __future__ import annotations

import datetime as dt
from itertools import pairwise
from typing import Literal

import pandas as pd

from windowkit.core.durations import Duration, to_micros

MissingPolicy = Literal["unsatisfied", "satisfying"]

OUTPUT_COLUMNS = ["key", "frame_id", "start", "end", "last", "n_tuples", "n_missing", "status"]

_MISSING_POLICIES = ("unsatisfied", "satisfying")


def threshold_frames_reference(
    df: pd.DataFrame,
    min_duration: Duration | str | int | dt.timedelta,
    missing: MissingPolicy = "unsatisfied",
    schedule: int | str | dt.timedelta | None = None,
    fragment_every: Duration | str | int | dt.timedelta | None = None,
    duplicates: str = "keep",
) -> pd.DataFrame:
    """Threshold frames of every key, by brute force.

    Parameters
    ----------
    df : pandas.DataFrame
        Columns ``key`` (any sortable type), ``time`` (int64 microseconds) and ``value``
        (``1`` predicate true, ``0`` false, ``-1`` missing). Row order breaks time ties.
    min_duration : Duration, str, int or timedelta
        ``"3 rows"`` (``n_tuples >= 3``) or ``"90 seconds"`` (``last - start >= 90 s``); an int
        means rows.
    missing : {"unsatisfied", "satisfying"}
        Whether a missing value (real ``-1`` row or virtual absent report) breaks a frame
        (``"unsatisfied"``) or is bridged (``"satisfying"``). A frame never starts or ends on a
        missing value either way.
    schedule : int, str, timedelta or None
        Reporting period (ints are microseconds); absent reports are inferred from gaps.
    fragment_every : Duration, str, int, timedelta or None
        When given, also emit ``"partial"`` rows: at the anchor, then every ``fragment_every``
        (rows or time) after it. When ``None``, only ``"final"`` rows are returned.
    duplicates : {"keep", "any", "all"}
        What rows of one key at one time mean (see the module docstring).

    Returns
    -------
    pandas.DataFrame
        Columns ``key, frame_id, start, end, last, n_tuples, n_missing, status``; ``end`` is a
        nullable ``Int64`` (``<NA>`` on partial rows); sorted by
        ``(key, frame_id, status == "final", last)``.

    Examples
    --------
    Appendix B, F1: maximal periods where Temperature > 32.

    >>> temps = [30, 31, 33, 34, 30, 34, 33, 34, 35, 32]
    >>> df = pd.DataFrame({"key": "s", "time": range(1, 11),
    ...                    "value": [int(t > 32) for t in temps]})
    >>> out = threshold_frames_reference(df, "1 rows")
    >>> out[["frame_id", "start", "last", "end", "n_tuples", "status"]]
       frame_id  start  last  end  n_tuples status
    0         3      3     4    5         2  final
    1         6      6     9   10         4  final

    With fragments every 2 rows after a 2-row anchor:

    >>> out = threshold_frames_reference(df, "2 rows", fragment_every="2 rows")
    >>> out[["frame_id", "start", "last", "end", "status"]]
       frame_id  start  last   end   status
    0         3      3     4  <NA>  partial
    1         3      3     4     5    final
    2         6      6     7  <NA>  partial
    3         6      6     9  <NA>  partial
    4         6      6     9    10    final
    """
    min_d = Duration.parse(min_duration, "min_duration")
    frag = None if fragment_every is None else Duration.parse(fragment_every, "fragment_every")
    if missing not in _MISSING_POLICIES:
        msg = f"`missing` must be one of {_MISSING_POLICIES}; got {missing!r}"
        raise ValueError(msg)
    period = None if schedule is None else to_micros(schedule, "schedule")
    _check_input(df)

    out: list[dict[str, object]] = []
    for key, group in df.groupby("key", sort=False):
        times = group["time"].astype("int64").tolist()
        rows = list(zip(times, group["value"].tolist(), strict=True))
        rows = _settle_ties(rows, duplicates)
        expanded = expand_schedule(rows, period)
        out.extend(_frames_of_key(key, expanded, missing, min_d, frag))

    result = pd.DataFrame(out, columns=OUTPUT_COLUMNS)
    result = result.astype(
        {
            "frame_id": "int64",
            "start": "int64",
            "end": "Int64",
            "last": "int64",
            "n_tuples": "int64",
            "n_missing": "int64",
            "status": "object",
        }
    )
    result["_final"] = result["status"] == "final"
    result = result.sort_values(["key", "frame_id", "_final", "last"], kind="stable")
    return result.drop(columns="_final").reset_index(drop=True)


_TIE_ORDER = {0: 0, -1: 1, 1: 2}  # unsatisfied, missing, satisfying


def _settle_ties(rows: list[tuple[int, int]], duplicates: str) -> list[tuple[int, int]]:
    """One key's rows in time order, with the ``duplicates`` rule applied to equal times."""
    if duplicates not in ("keep", "any", "all"):
        msg = f"`duplicates` must be one of 'keep', 'any', 'all'; got {duplicates!r}"
        raise ValueError(msg)
    by_time: dict[int, list[int]] = {}
    for t, v in rows:
        by_time.setdefault(t, []).append(v)
    settled = []
    for t in sorted(by_time):
        values = sorted(by_time[t], key=_TIE_ORDER.__getitem__)
        if duplicates == "any":
            values = [1 if 1 in values else (-1 if -1 in values else 0)]
        elif duplicates == "all":
            values = [0 if 0 in values else (-1 if -1 in values else 1)]
        settled.extend((t, v) for v in values)
    return settled


def expand_schedule(rows: list[tuple[int, int]], period: int | None) -> list[tuple[int, int]]:
    """Insert the virtual absent reports a schedule implies into one key's sorted rows.

    Parameters
    ----------
    rows : list of (time, value)
        One key's rows, sorted by time.
    period : int or None
        Reporting period in microseconds; ``None`` means no schedule (rows returned unchanged).

    Returns
    -------
    list of (time, value)
        Real rows plus virtual ``(time, -1)`` reports, in time order, ending with the end-of-input
        absent report at ``last_time + period``.

    Examples
    --------
    A gap of 2.5 periods rounds (halves up) to 3 periods: two absent reports.

    >>> expand_schedule([(0, 1), (25, 1)], 10)
    [(0, 1), (10, -1), (20, -1), (25, 1), (35, -1)]
    >>> expand_schedule([(0, 1), (14, 0)], 10)
    [(0, 1), (14, 0), (24, -1)]
    >>> expand_schedule([(0, 1), (14, 0)], None)
    [(0, 1), (14, 0)]
    """
    if period is None or not rows:
        return list(rows)
    expanded: list[tuple[int, int]] = [rows[0]]
    for (a, _), (b, value) in pairwise(rows):
        gap = b - a
        absent = max(0, (2 * gap + period) // (2 * period) - 1)
        for j in range(1, absent + 1):
            expanded.append((a + j * period, -1))
        expanded.append((b, value))
    expanded.append((rows[-1][0] + period, -1))
    return expanded


def _frames_of_key(
    key: object,
    expanded: list[tuple[int, int]],
    missing: str,
    min_d: Duration,
    frag: Duration | None,
) -> list[dict[str, object]]:
    """All output rows (partial and final) of one key's expanded sequence."""
    times = [t for t, _ in expanded]
    values = [v for _, v in expanded]

    # 1. Segments between separators, as lists of indices into `expanded`.
    segments: list[list[int]] = []
    current: list[int] = []
    for i, value in enumerate(values):
        separates = value == 0 or (value == -1 and missing == "unsatisfied")
        if separates:
            segments.append(current)
            current = []
        else:
            current.append(i)
    segments.append(current)

    # 2. Trim leading/trailing missing elements; what remains is a candidate frame.
    rows: list[dict[str, object]] = []
    frame_id = None
    for segment in segments:
        while segment and values[segment[0]] == -1:
            segment = segment[1:]
        while segment and values[segment[-1]] == -1:
            segment = segment[:-1]
        if not segment:
            continue
        first, last = segment[0], segment[-1]
        start, last_time = times[first], times[last]
        n_tuples = last - first + 1
        n_missing = sum(1 for i in range(first, last + 1) if values[i] == -1)

        # 3. Minimum duration.
        if min_d.kind == "rows":
            long_enough = n_tuples >= min_d.amount
        else:
            long_enough = last_time - start >= min_d.amount
        if not long_enough:
            continue

        # 4. End: the element after `last`, else one microsecond past it.
        end = times[last + 1] if last + 1 < len(expanded) else last_time + 1
        frame_id = next_frame_id(start, frame_id)

        # 5. Partial fragments.
        if frag is not None:
            for j in _fragment_points(times, values, first, last, min_d, frag):
                rows.append(
                    {
                        "key": key,
                        "frame_id": frame_id,
                        "start": start,
                        "end": None,
                        "last": times[j],
                        "n_tuples": j - first + 1,
                        "n_missing": sum(1 for i in range(first, j + 1) if values[i] == -1),
                        "status": "partial",
                    }
                )
        rows.append(
            {
                "key": key,
                "frame_id": frame_id,
                "start": start,
                "end": end,
                "last": last_time,
                "n_tuples": n_tuples,
                "n_missing": n_missing,
                "status": "final",
            }
        )
    return rows


def next_frame_id(start: int, previous: int | None) -> int:
    """A frame's ``frame_id``: the time of its first row, or one past the ``previous`` id of
    its key when that is not below it (frames starting at one instant, on tied rows), so that
    a key's ids increase; -1 (which means "no id" in state bytes) becomes 0.

    Examples
    --------
    >>> next_frame_id(30, None), next_frame_id(30, 30), next_frame_id(45, 31)
    (30, 31, 45)
    >>> next_frame_id(-1, None), next_frame_id(-5, None)
    (0, -5)
    """
    fid = start if previous is None else max(start, previous + 1)
    return 0 if fid == -1 else fid


def _fragment_points(
    times: list[int],
    values: list[int],
    first: int,
    last: int,
    min_d: Duration,
    frag: Duration,
) -> list[int]:
    """Indices of the elements where a frame emits partial rows: the anchor, then every F."""
    points: list[int] = []
    anchor: int | None = None
    k = 1
    for j in range(first, last + 1):
        if values[j] != 1:  # the frame-so-far always ends on a known satisfying element
            continue
        if anchor is None:
            size = (j - first + 1) if min_d.kind == "rows" else (times[j] - times[first])
            if size >= min_d.amount:
                anchor = j
                points.append(j)
            continue
        progress = (j - anchor) if frag.kind == "rows" else (times[j] - times[anchor])
        if progress >= k * frag.amount:
            points.append(j)
            k = progress // frag.amount + 1  # several thresholds crossed: one row, skip them
    return points


def _check_input(df: pd.DataFrame) -> None:
    """Raise ``ValueError`` unless ``df`` has integer ``time`` and values in {1, 0, -1}."""
    missing_cols = [c for c in ("key", "time", "value") if c not in df.columns]
    if missing_cols:
        msg = f"`df` must have columns key, time, value; missing {missing_cols}"
        raise ValueError(msg)
    if not pd.api.types.is_integer_dtype(df["time"]):
        msg = f"`df.time` must be int64 microseconds; got dtype {df['time'].dtype}"
        raise ValueError(msg)
    bad = sorted(set(df["value"].tolist()) - {1, 0, -1})
    if bad:
        msg = f"`df.value` must be in {{1, 0, -1}}; got {bad[:5]}"
        raise ValueError(msg)
