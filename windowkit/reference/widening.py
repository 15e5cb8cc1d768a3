"""Brute-force progressive window widening, from the paper's definitions (a test oracle).

Every window of every level is built from scratch, for every key: the level-k batch ``b`` is
the key's rows with time in ``[b d_k, (b+1) d_k)``, of which, for ``k >= 1`` and more than
``2 L`` rows, only the first and last ``L`` are kept (the closed form of Algorithm 2's recursive
combining); the window ``(b, b+1)`` is batch ``b`` then batch ``b+1``. Level-0 windows over
``4 L`` rows are cut into pieces of ``4 L`` rows every ``2 L`` when ``base_chunks`` is set. The
detector runs on every window with a row (no window is skipped); a key's rows with equal
times are ordered by their encoded content, and an ordinal numbers them; with ``report="first"``
each match (its rows' ``(time, ordinal)`` in the detector's order) is kept at its first window
in the order (window end, level, window start, piece).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from windowkit.core.widening.config import WideningConfig
from windowkit.core.widening.detector import Detector
from windowkit.core.widening.operator import OUTPUT_SCHEMA


def reference_windows(times: np.ndarray, config: WideningConfig) -> list[tuple]:
    """Every window of one key's rows (times sorted): ``(end, level, start, piece, positions)``.

    Examples
    --------
    >>> cfg = WideningConfig(base=10, max_length=1, levels=2)
    >>> [(w[1], w[2], w[4]) for w in reference_windows(np.array([1, 5, 12]), cfg)]
    [(0, -10, [0, 1]), (0, 0, [0, 1, 2]), (1, -20, [0, 2]), (0, 10, [2]), (1, 0, [0, 2])]
    """
    windows = []
    if len(times) == 0:
        return windows
    L = config.max_length
    for k in range(config.levels):
        d = config.level_duration(k)
        first_b, last_b = int(times.min() // d), int(times.max() // d)

        def batch(b: int, k: int = k, d: int = d) -> list[int]:
            rows = [i for i, t in enumerate(times.tolist()) if b * d <= t < (b + 1) * d]
            if k >= 1 and len(rows) > 2 * L:
                rows = rows[:L] + rows[-L:]
            return rows

        for b in range(first_b - 1, last_b + 1):
            rows = batch(b) + batch(b + 1)
            if not rows:
                continue
            start, end = b * d, (b + 2) * d
            if k == 0 and config.base_chunks and len(rows) > 4 * L:
                piece, at = 0, 0
                while True:
                    windows.append((end, k, start, piece, rows[at: at + 4 * L]))
                    if at + 4 * L >= len(rows):
                        break
                    piece, at = piece + 1, at + 2 * L
            else:
                windows.append((end, k, start, 0, rows))
    windows.sort(key=lambda w: w[:4])
    return windows


def widening_reference(df: pd.DataFrame, detector: Detector,
                       config: WideningConfig) -> pd.DataFrame:
    """Detections of PWW over ``df`` (columns ``key``, ``time`` and the detector's), brute force.

    Examples
    --------
    The level-1 batch ``[0, 20)`` keeps only its first and last row (``L = 1``): ``a`` at 1
    and ``b`` at 12 make a new match there.

    >>> from windowkit.core.widening.episode_detector import EpisodeDetector
    >>> df = pd.DataFrame({"key": ["k", "k", "k"], "time": [1, 5, 12],
    ...                    "call": ["a", "b", "b"]})
    >>> out = widening_reference(df, EpisodeDetector("a\\nb"),
    ...                          WideningConfig(base=10, max_length=1, levels=2))
    >>> out[["level", "window_start", "window_end", "times"]].values.tolist()
    [[0, -10, 10, '1,5'], [1, -20, 20, '1,12']]
    """
    df = df.reset_index(drop=True)
    df = df.iloc[np.argsort(df["time"].to_numpy(), kind="stable")].reset_index(drop=True)
    rows_out = []
    for key in pd.unique(df["key"]):
        part = df[df["key"] == key].reset_index(drop=True)
        feats = np.asarray(detector.encode(part), dtype=np.int64)
        # a key's rows at one time are ordered by their encoded content (then arrival)
        order = np.lexsort((*(feats[:, j] for j in range(feats.shape[1] - 1, -1, -1)),
                            part["time"].to_numpy()))
        part, feats = part.iloc[order].reset_index(drop=True), feats[order]
        times = part["time"].to_numpy(dtype=np.int64)
        ordinals = part.groupby("time").cumcount().to_numpy()
        seen = set()
        for end, level, start, _piece, positions in reference_windows(times, config):
            for match in detector.detect(feats[positions]):
                rows = [positions[p] for p in match]
                ts = [int(times[r]) for r in rows]
                os_ = [int(ordinals[r]) for r in rows]
                identity = (*ts, *os_)
                if config.report == "first":
                    if identity in seen:
                        continue
                    seen.add(identity)
                rows_out.append((key, level, start, end, end, min(ts), max(ts),
                                 max(ts) - min(ts), ",".join(map(str, ts)),
                                 ",".join(map(str, os_))))
    out = pd.DataFrame(rows_out, columns=[n for n, _ in OUTPUT_SCHEMA])
    for name, kind in OUTPUT_SCHEMA:
        if kind in ("int64", "timestamp"):
            out[name] = out[name].astype(np.int64)
    return out
