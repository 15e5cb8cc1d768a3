"""Brute-force multi-granular window reports, straight from the definitions.

With ``closed="right"``, for every key, level ``k`` and instant ``tc`` with
``(tc - t0) mod b_k = 0``, the scope is the closed interval ``[max(t0, t_k), tc - (tc - t0) mod
b_k]`` with ``t_k = tc - (tc - t0) mod b_k - w_k + 1`` (the paper's scope, in its discrete time
units). With ``closed="left"`` (Spark's ``window()``), the windows of level ``k`` are
``[s, s + w_k)`` for every ``s`` with ``(s - t0) mod b_k = 0``, and ``tc`` is a window's last
instant. A report exists when the scope holds a row of the key, and its values are computed
from the raw rows filtered to the scope. Nothing here shares code with
``windowkit.core.multigranular`` beyond the parsed levels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def _report_instants(times: np.ndarray, t0: int, w: int, b: int, closed: str) -> list[int]:
    """Every report instant whose scope holds one of ``times`` (brute force over instants):
    a slide instant (``closed="right"``), or the last instant of a window (``"left"``)."""
    out: set[int] = set()
    for t in times.tolist():
        if closed == "left":
            # windows [s, s + w) holding t: s in (t - w, t] with (s - t0) % b == 0
            first = t - w + 1 + (-(t - w + 1 - t0)) % b
            out.update(s + w - 1 for s in range(first, t + 1, b))
            continue
        if t < t0:
            continue
        # tc in [t, t + w - 1] with (tc - t0) % b == 0
        first = t + (-(t - t0)) % b
        out.update(range(first, t + w, b))
    return sorted(out)


def _scope(tc: int, t0: int, w: int, b: int, closed: str) -> tuple[int, int]:
    """Closed bounds of the scope reported at ``tc`` (a window's last instant for "left")."""
    if closed == "left":
        end = tc + 1 - (tc + 1 - t0) % b
        return end - w, end - 1
    front = tc - (tc - t0) % b
    return max(t0, front - w + 1), front


def reference_reports(
    rows: pd.DataFrame,
    levels: list[tuple[int, int]],
    origin: int = 0,
    weights: list[float] | None = None,
    continuous: bool = False,
    closed: str = "left",
) -> pd.DataFrame:
    """Every report of every key and level from raw rows ``key, time, value``.

    Parameters
    ----------
    rows : pandas.DataFrame
        Columns ``key``, ``time`` (int µs), ``value``.
    levels : list of (range, slide)
        In microseconds, finest level first.
    origin : int
        ``t0``.
    weights : list of float, optional
        Weights per level for the decayed sums over the disjoint intervals.
    continuous : bool
        Every level slides at level 0's slide.
    closed : {"left", "right"}
        ``window()``'s windows ``[s, s + w)``, or the paper's scopes ``(tc - w, tc]``.

    Returns
    -------
    pandas.DataFrame
        ``key, level, window_start, window_end`` (half-open), ``count, sum, mean, min, max,
        variance, stddev, slope, intercept, decayed_sum, decayed_count`` and ``points``: the
        scope's ``(seconds relative to tc, value)`` pairs for least-squares checks. If
        ``rows`` has an ``item`` column, also ``distinct``: the exact number of distinct items
        in the scope, compared as strings, nulls and empty strings left out (what a sketch of
        the items' strings counts).

    Examples
    --------
    >>> rows = pd.DataFrame({"key": "a", "time": [1, 2, 9], "value": [1.0, 2.0, 4.0]})
    >>> ref = reference_reports(rows, [(4, 1), (8, 2)], closed="right")
    >>> ref[(ref.window_end == 11) & (ref.level == 1)][["window_start", "count"]].values.tolist()
    [[3, 1]]
    >>> ref = reference_reports(rows, [(4, 1), (8, 2)])
    >>> ref[(ref.window_end == 10) & (ref.level == 1)][["window_start", "count"]].values.tolist()
    [[2, 2]]
    """
    if continuous:
        levels = [(w, levels[0][1]) for w, _ in levels]
    out = []
    for key, grp in rows.groupby("key", sort=True):
        times = grp["time"].to_numpy(np.int64)
        values = grp["value"].to_numpy(np.float64)
        items = _item_strings(grp["item"]) if "item" in grp else None
        for k, (w, b) in enumerate(levels):
            for tc in _report_instants(times, origin, w, b, closed):
                lo, hi = _scope(tc, origin, w, b, closed)
                mask = (times >= lo) & (times <= hi)
                if not mask.any():
                    continue
                v, t = values[mask], times[mask]
                rec = {"key": key, "level": k, "window_start": lo, "window_end": hi + 1,
                       "count": int(mask.sum()), "sum": float(v.sum()), "mean": float(v.mean()),
                       "min": float(v.min()), "max": float(v.max()),
                       "variance": float(v.var(ddof=1)) if len(v) > 1 else np.nan}
                rec["stddev"] = float(np.sqrt(rec["variance"]))
                if items is not None:
                    rec["distinct"] = len({x for x in items[mask].tolist() if x})
                rel = (t - tc) / 1e6
                rec["points"] = (rel, v)
                if len(np.unique(t)) > 1:
                    slope, intercept = np.polyfit(rel, v, 1)
                else:
                    slope = intercept = np.nan
                rec["slope"], rec["intercept"] = float(slope), float(intercept)
                if weights is not None:
                    dsum = dcount = 0.0
                    prev = None
                    for j in range(k + 1):
                        wj, bj = levels[j]
                        lo_j, hi_j = _scope(tc, origin, wj, bj, closed)
                        m = (times >= lo_j) & (times <= hi_j)
                        if prev is not None:
                            m &= ~((times >= prev[0]) & (times <= prev[1]))
                        prev = (lo_j, hi_j)
                        dsum += weights[j] * float(values[m].sum())
                        dcount += weights[j] * int(m.sum())
                    rec["decayed_sum"], rec["decayed_count"] = dsum, dcount
                out.append(rec)
    return pd.DataFrame(out)


def _item_strings(items: pd.Series) -> np.ndarray:
    """Items as strings, null as the empty string (neither is counted as a distinct item)."""
    return np.asarray([str(x) if pd.notna(x) else "" for x in items.tolist()], dtype=object)


def reference_recurring(
    rows: pd.DataFrame, levels: list[tuple[int, int]], origin: int = 0, closed: str = "left"
) -> pd.DataFrame:
    """Recurring items: at each report of level ``k`` (``tc`` where it slides), the items
    present at least once in every disjoint interval ``D_j`` for ``j <= k`` (``D_0`` is level
    0's scope, ``D_j`` level ``j``'s scope minus level ``j - 1``'s), with their count in level
    ``k``'s scope.

    Examples
    --------
    >>> rows = pd.DataFrame({"key": "a", "time": [1, 6, 7], "item": ["x", "x", "y"]})
    >>> rec = reference_recurring(rows, [(2, 1), (8, 2)], closed="right")
    >>> rec[rec.level == 1][["window_end", "item", "count"]].values.tolist()
    [[7, 'x', 2]]
    """
    out = []
    for (key, item), grp in rows.groupby(["key", "item"], sort=True):
        times = grp["time"].to_numpy(np.int64)
        for k, (w, b) in enumerate(levels):
            for tc in _report_instants(times, origin, w, b, closed):
                present = True
                prev = None
                for j in range(k + 1):
                    lo_j, hi_j = _scope(tc, origin, *levels[j], closed)
                    m = (times >= lo_j) & (times <= hi_j)
                    if prev is not None:
                        m &= ~((times >= prev[0]) & (times <= prev[1]))
                    prev = (lo_j, hi_j)
                    present &= bool(m.any())
                if not present:
                    continue
                lo, hi = _scope(tc, origin, w, b, closed)
                count = int(((times >= lo) & (times <= hi)).sum())
                out.append({"key": key, "item": item, "level": k, "window_start": lo,
                            "window_end": hi + 1, "count": count})
    return pd.DataFrame(out, columns=["key", "item", "level", "window_start", "window_end",
                                      "count"])
