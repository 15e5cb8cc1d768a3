"""Brute-force boundary, delta, aggregate and increasing-trend frames, and F2 (the longest).

The oracle for ``windowkit.core.frames`` (boundary, delta, aggregate and custom framings),
written from the frames paper's definitions (sections 4.1-4.3, appendices B and F; the rules
below are how we read them), one key at a time, with plain Python lists, recomputing every
aggregate from scratch for every candidate frame. It is meant to be obviously right, not fast.

For one key (times int64 µs; a value is a float, missing when null, NaN or infinite):

1. *Elements*: the key's rows ordered by time and, with a reporting schedule of period ``P``,
   ``max(0, (2 g + P) // (2 P) - 1)`` absent reports (missing) in each gap ``g``, at
   ``a + P, a + 2P, ...``, plus one absent report ``P`` after the last row. Rows at equal
   times are all elements, by value with missing last (threshold: unsatisfied, missing,
   satisfying, as :func:`windowkit.reference.frames.threshold_frames_reference` takes them);
   for threshold frames ``duplicates="any"`` / ``"all"`` make them one element instead (the
   tie's highest / lowest in that order).
2. *Segments*: with ``missing="unsatisfied"`` every missing element cuts the sequence; with
   ``missing="satisfying"`` the segment is the whole sequence and missing elements are skipped
   when values are read.
3. *Candidate frames* (Definition 3) of a segment are runs of its known rows whose values
   satisfy the local predicate ``holds(values)``:
   boundary: every value in the band of the first (``floor(a / x)`` equal);
   delta: ``max - min < x``; aggregate: ``f(values) θ x``; increasing: strictly increasing;
   threshold (values are predicate codes): every value above 0.
4. *Final frames* (Definition 4, drained partition): the first frame starts at the segment's
   first known row; each next frame starts at the row after the previous one ended.
   *Maximal* (boundary, delta, increasing, threshold, aggregate with ``<``/``<=``): the
   longest run from the start all of whose prefixes are candidates (a row that is no candidate
   on its own is in no frame); reported if at least ``min_duration`` long. *Minimal*
   (aggregate ``>``/``>=``): the shortest run from the start that is a candidate and at least
   ``min_duration`` long; none if the segment ends first.
5. A frame reports ``start``/``last`` (times of its first and last rows), ``end`` (time of the
   element after ``last``, else ``last + 1``), ``n_tuples`` (elements from first to last),
   ``n_missing``; with ``extent="liberal"`` ``start`` is the time of the element before the
   first row when there is one. ``frame_id`` is the time of the first row (one past the
   previous id of the key when frames start at one instant). Partial rows follow threshold
   frames' rule (:func:`windowkit.reference.frames.threshold_frames_reference`).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from windowkit.core.durations import Duration, to_micros
from windowkit.reference.frames import _fragment_points, next_frame_id

OUTPUT_COLUMNS = ["key", "frame_id", "start", "end", "last", "n_tuples", "n_missing", "status"]
KINDS = ("boundary", "delta", "aggregate", "increasing", "threshold")


def holds(kind: str, params: dict[str, Any], values: list[float]) -> bool:
    """The local predicate of a framing over a run of known values.

    Examples
    --------
    >>> holds("delta", {"x": 2.0}, [1.0, 2.5]), holds("delta", {"x": 2.0}, [1.0, 3.0])
    (True, False)
    >>> holds("aggregate", {"func": "mean", "op": ">", "x": 2.0}, [1.0, 4.0])
    True
    """
    if kind == "boundary":
        x = params["x"]
        return len({math.floor(v / x) for v in values}) == 1
    if kind == "delta":
        return max(values) - min(values) < params["x"]
    if kind == "threshold":  # predicate codes: every row holds
        return all(v > 0 for v in values)
    if kind == "increasing":
        return all(b > a for a, b in zip(values, values[1:], strict=False))
    if kind == "aggregate":
        func, op, x = params["func"], params["op"], params["x"]
        if func == "count":
            agg = float(len(values))
        elif func in ("sum", "mean"):
            total = 0.0
            for v in values:  # left to right, as a stream adds them
                total += v
            agg = total if func == "sum" else total / len(values)
        else:
            agg = min(values) if func == "min" else max(values)
        return {"<": agg < x, "<=": agg <= x, ">": agg > x, ">=": agg >= x}[op]
    msg = f"`kind` must be one of {KINDS}; got {kind!r}"
    raise ValueError(msg)


def is_minimal(kind: str, params: dict[str, Any]) -> bool:
    """Whether the framing's frames are minimal (aggregate frames with ``>`` or ``>=``).

    Examples
    --------
    >>> is_minimal("aggregate", {"func": "sum", "op": ">=", "x": 1.0}), is_minimal("delta", {})
    (True, False)
    """
    return kind == "aggregate" and params["op"] in (">", ">=")


def framings_reference(
    df: pd.DataFrame,
    kind: str,
    params: dict[str, Any],
    min_duration: Duration | str | int = "1 rows",
    missing: str = "unsatisfied",
    schedule: int | str | None = None,
    fragment_every: Duration | str | int | None = None,
    extent: str = "conservative",
    duplicates: str = "keep",
) -> pd.DataFrame:
    """Frames of every key of ``df`` by brute force (see the module docstring).

    Parameters
    ----------
    df : pandas.DataFrame
        Columns ``key``, ``time`` (int64 µs) and ``value`` (float; NaN/None/inf missing).
    kind : {"boundary", "delta", "aggregate", "increasing", "threshold"}
        The framing.
    params : dict
        ``{"x": ...}`` (boundary, delta), ``{"func", "op", "x"}`` (aggregate), ``{}``
        (increasing).
    min_duration, missing, schedule, fragment_every, extent
        As for the core framers.
    duplicates : {"keep", "any", "all"}
        Rows of a key at one time; ``"any"`` and ``"all"`` for threshold frames only.

    Returns
    -------
    pandas.DataFrame
        Threshold frames' columns, sorted by ``(key, frame_id, status == "final", last)``.

    Examples
    --------
    Appendix B's F3 (increasing over at least three reports):

    >>> temps = [30, 31, 33, 34, 30, 34, 33, 34, 35, 32]
    >>> df = pd.DataFrame({"key": "s", "time": range(1, 11), "value": temps})
    >>> framings_reference(df, "increasing", {}, "3 rows")[["start", "last", "end"]]
       start  last  end
    0      1     4    5
    1      7     9   10
    """
    min_d = Duration.parse(min_duration, "min_duration")
    frag = None if fragment_every is None else Duration.parse(fragment_every, "fragment_every")
    period = None if schedule is None else to_micros(schedule, "schedule")
    if kind not in KINDS:
        msg = f"`kind` must be one of {KINDS}; got {kind!r}"
        raise ValueError(msg)
    if duplicates != "keep" and kind != "threshold":
        msg = f"`duplicates` must be 'keep' for {kind} frames; got {duplicates!r}"
        raise ValueError(msg)
    out: list[dict[str, Any]] = []
    for key, group in df.groupby("key", sort=False):
        rows = []
        for t, v in zip(group["time"].astype("int64"), group["value"], strict=True):
            v = None if v is None or pd.isna(v) or not math.isfinite(float(v)) else float(v)
            rows.append((int(t), v))
        rows = _settle_ties(rows, kind, duplicates)
        elements = _expand(rows, period)
        out.extend(_frames_of_key(key, elements, kind, params, min_d, missing, frag, extent))
    result = pd.DataFrame(out, columns=OUTPUT_COLUMNS).astype({
        "frame_id": "int64", "start": "int64", "end": "Int64", "last": "int64",
        "n_tuples": "int64", "n_missing": "int64", "status": "object"})
    result["_final"] = result["status"] == "final"
    result = result.sort_values(["key", "frame_id", "_final", "last"], kind="stable")
    return result.drop(columns="_final").reset_index(drop=True)


def _tie_order(kind: str, value: float | None) -> float:
    if kind == "threshold":  # unsatisfied, missing, satisfying
        return 1.0 if value is None else (2.0 if value > 0 else 0.0)
    return math.inf if value is None else value


def _settle_ties(rows: list[tuple[int, float | None]], kind: str,
                 duplicates: str) -> list[tuple[int, float | None]]:
    """One key's rows in time order, equal times in tie order, or one row per time."""
    by_time: dict[int, list[float | None]] = {}
    for t, v in rows:
        by_time.setdefault(t, []).append(v)
    settled = []
    for t in sorted(by_time):
        values = sorted(by_time[t], key=lambda v: _tie_order(kind, v))
        if duplicates == "any":
            values = values[-1:]
        elif duplicates == "all":
            values = values[:1]
        settled.extend((t, v) for v in values)
    return settled


def _expand(rows: list[tuple[int, float | None]],
            period: int | None) -> list[tuple[int, float | None]]:
    """Rows plus the absent reports a schedule implies (value None)."""
    if period is None or not rows:
        return list(rows)
    out = [rows[0]]
    for (a, _), (b, v) in zip(rows, rows[1:], strict=False):
        absent = max(0, (2 * (b - a) + period) // (2 * period) - 1)
        out.extend((a + j * period, None) for j in range(1, absent + 1))
        out.append((b, v))
    out.append((rows[-1][0] + period, None))
    return out


def _frames_of_key(key, elements, kind, params, min_d, missing, frag, extent):
    times = [t for t, _ in elements]
    values = [v for _, v in elements]
    # segments of known elements, as lists of indices into `elements`
    segments: list[list[int]] = [[]]
    for i, v in enumerate(values):
        if v is None:
            if missing == "unsatisfied":
                segments.append([])
        else:
            segments[-1].append(i)
    minimal = is_minimal(kind, params)

    def long_enough(first: int, last: int) -> bool:
        if min_d.kind == "rows":
            return last - first + 1 >= min_d.amount
        return times[last] - times[first] >= min_d.amount

    frames: list[list[int]] = []
    for seg in segments:
        pos = 0
        while pos < len(seg):
            if minimal:
                stop = next((j for j in range(pos, len(seg))
                             if holds(kind, params, [values[i] for i in seg[pos:j + 1]])
                             and long_enough(seg[pos], seg[j])), None)
                if stop is None:
                    break
                frames.append(seg[pos:stop + 1])
                pos = stop + 1
                continue
            stop = pos - 1
            while stop + 1 < len(seg) and holds(kind, params,
                                                [values[i] for i in seg[pos:stop + 2]]):
                stop += 1
            if stop < pos:  # no candidate starts here: the row is in no frame
                pos += 1
                continue
            if long_enough(seg[pos], seg[stop]):
                frames.append(seg[pos:stop + 1])
            pos = stop + 1

    rows: list[dict[str, Any]] = []
    frame_id = None
    for frame in frames:
        first, last = frame[0], frame[-1]
        start = times[first]
        frame_id = next_frame_id(start, frame_id)
        if extent == "liberal" and first > 0:
            start = times[first - 1]
        n_missing = sum(1 for i in range(first, last + 1) if values[i] is None)
        end = times[last + 1] if last + 1 < len(elements) else times[last] + 1
        if frag is not None and not minimal:
            codes = [1 if v is not None else -1 for v in values]
            for j in _fragment_points(times, codes, first, last, min_d, frag):
                rows.append({"key": key, "frame_id": frame_id, "start": start, "end": None,
                             "last": times[j], "n_tuples": j - first + 1,
                             "n_missing": sum(1 for i in range(first, j + 1)
                                              if values[i] is None),
                             "status": "partial"})
        rows.append({"key": key, "frame_id": frame_id, "start": start, "end": end,
                     "last": times[last], "n_tuples": last - first + 1,
                     "n_missing": n_missing, "status": "final"})
    return rows


def longest_frames_reference(frames: pd.DataFrame, by_key: bool = True) -> pd.DataFrame:
    """Appendix B's F2: the frames of maximum duration ``last - start`` (ties: all of them).

    Parameters
    ----------
    frames : pandas.DataFrame
        Final frames (``key``, ``start``, ``last``, ...).
    by_key : bool
        The longest per key, or over all keys.

    Returns
    -------
    pandas.DataFrame
        The longest frames, in the input's order.

    Examples
    --------
    >>> f = pd.DataFrame({"key": ["s", "s"], "start": [3, 6], "last": [4, 9]})
    >>> longest_frames_reference(f)[["start", "last"]].values.tolist()
    [[6, 9]]
    """
    keep = []
    groups = frames.groupby("key", sort=False) if by_key else [(None, frames)]
    for _, group in groups:
        lengths = [b - a for a, b in zip(group["start"], group["last"], strict=True)]
        best = max(lengths)
        keep.extend(idx for idx, n in zip(group.index, lengths, strict=True) if n == best)
    return frames.loc[sorted(keep)]
