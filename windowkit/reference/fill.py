"""Brute-force frame filling (Definition 6): the oracle for ``windowkit.spark.fill_frames``.

A frame filling takes a filler stream S', a framing F modified by g, and a query Q. Here g
shifts each frame's interval to ``[start - before, end + after)`` (a partial fragment, which
has no ``end`` yet, covers ``[start - before, last + 1 µs + after)``), and Q either keeps the
filler rows that fall in it (attach) or counts them. With ``by``, a frame is filled only with
rows of its own key. Every frame is checked against every row: quadratic, obviously right.
"""

from __future__ import annotations

import pandas as pd


def fill_frames_reference(
    frames: pd.DataFrame,
    data: pd.DataFrame,
    time: str,
    by: str | None = None,
    before: int = 0,
    after: int = 0,
) -> pd.DataFrame:
    """Each frame's filler rows, by brute force.

    Parameters
    ----------
    frames : pandas.DataFrame
        Columns ``start``, ``end`` (nullable), ``last`` (int64 µs) and any others, plus ``by``.
    data : pandas.DataFrame
        The filler rows, with an int64 µs column ``time``.
    time : str
        The filler's time column.
    by : str, optional
        Key column in both: fill each frame with its own key's rows only.
    before, after : int
        Microseconds added before ``start`` and after ``end`` (the paper's g).

    Returns
    -------
    pandas.DataFrame
        One row per (frame, filler row) pair: the frame's columns, then the filler's (its
        ``by`` column dropped; other names the frame also has get a ``filler_`` prefix).

    Examples
    --------
    >>> frames = pd.DataFrame({"k": ["a"], "start": [10], "end": [20], "last": [15]})
    >>> data = pd.DataFrame({"k": ["a", "a", "b"], "t": [5, 12, 13], "x": [1, 2, 3]})
    >>> fill_frames_reference(frames, data, "t", by="k", before=5)[["t", "x"]].values.tolist()
    [[5, 1], [12, 2]]
    """
    renamed = {c: f"filler_{c}" for c in data.columns if c in frames.columns and c != by}
    filler = data.rename(columns=renamed)
    t_name = renamed.get(time, time)
    pairs = []
    for _, frame in frames.iterrows():
        end = frame["end"]
        hi = (int(frame["last"]) + 1 if pd.isna(end) else int(end)) + after
        lo = int(frame["start"]) - before
        for _, row in filler.iterrows():
            if by is not None and row[by] != frame[by]:
                continue
            if lo <= int(row[t_name]) < hi:
                pairs.append({**frame.to_dict(),
                              **{c: row[c] for c in filler.columns if c != by}})
    columns = list(frames.columns) + [c for c in filler.columns if c != by]
    return pd.DataFrame(pairs, columns=columns)
