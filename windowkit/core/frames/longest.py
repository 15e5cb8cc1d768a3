"""Appendix B's F2: the (globally) longest frame; batch only.

"F2. (globally) maximum period where Temperature > 32 ... For framing scheme F2 however, the
existence of a frame is not definite until all the input has been seen, which could be
arbitrarily in the future. Hence, we could only report a result for F2 over a stream if the
stream ends." So F2 is not a framing function (Definition 5) and not a ``StreamOperator``: it
is a selection over the complete (final) frames of any framing, once the input has ended.

The length of a frame is ``last - start``, the period its rows are known to span (the paper's
``(fs, fe)``); ties keep every frame of the maximum length.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from windowkit.core.operator import KEY


def longest_frames(frames: pd.DataFrame, per_key: bool = True) -> pd.DataFrame:
    """The longest final frames, per key or over all keys (Appendix B's F2).

    Parameters
    ----------
    frames : pandas.DataFrame
        Output of a framer on a *bounded* input (``finish()`` called): columns ``key``,
        ``start``, ``last``, ``status``; partial rows are ignored.
    per_key : bool
        The longest frames of each key (default), or of all keys together.

    Returns
    -------
    pandas.DataFrame
        The final frames of maximum ``last - start``, in the input's order.

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    F2 on Appendix B's stream: of F1's frames (3, 4) and (6, 9), the longest.

    >>> from windowkit.core.frames import ThresholdFramer
    >>> temps = np.array([30, 31, 33, 34, 30, 34, 33, 34, 35, 32])
    >>> framer = ThresholdFramer("1 rows")
    >>> f1 = pd.concat([framer.update(np.arange(1, 11), temps > 32), framer.finish()])
    >>> longest_frames(f1)[["start", "last"]].values.tolist()
    [[6, 9]]
    """
    needed = [c for c in (KEY, "start", "last", "status") if c not in frames.columns]
    if needed:
        msg = f"`frames` must have columns key, start, last, status; missing {needed}"
        raise ValueError(msg)
    final = frames[frames["status"] == "final"]
    if final.empty:
        return final
    length = final["last"].to_numpy(np.int64) - final["start"].to_numpy(np.int64)
    if per_key:
        best = pd.Series(length, index=final.index).groupby(final[KEY].to_numpy()).transform("max")
        keep = length == best.to_numpy()
    else:
        keep = length == length.max()
    return final[keep]
