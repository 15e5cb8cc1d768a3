"""Plots where a picture says more than a table (matplotlib, no display needed)."""

from __future__ import annotations

import pandas as pd


def plot_frames(
    readings: pd.DataFrame,
    frames: pd.DataFrame,
    path: str,
    *,
    time: str = "time",
    value: str = "loss_rate",
    threshold: float | None = None,
    title: str = "",
) -> str:
    """Plot one key's readings with its final frames shaded; write a PNG to ``path``.

    Parameters
    ----------
    readings : pandas.DataFrame
        One key's rows with ``time`` and ``value`` columns.
    frames : pandas.DataFrame
        That key's frames with ``start``, ``end`` and ``status`` columns.
    path : str
        Where to write the PNG.
    time, value : str
        Column names in ``readings``.
    threshold : float, optional
        Draw the predicate's threshold as a horizontal line.
    title : str
        Figure title.

    Returns
    -------
    str
        ``path``.

    Examples
    --------
    >>> import tempfile, os
    >>> r = pd.DataFrame({"time": pd.date_range("2024-01-01", periods=6, freq="30s"),
    ...                   "loss_rate": [0.001, 0.004, 0.005, 0.001, 0.004, 0.001]})
    >>> f = pd.DataFrame({"start": [r.time[1]], "end": [r.time[3]], "status": ["final"]})
    >>> out = plot_frames(r, f, os.path.join(tempfile.mkdtemp(), "p.png"), threshold=0.003)
    >>> os.path.getsize(out) > 1000
    True
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 3.8), dpi=110)
    data = readings.sort_values(time)
    ax.plot(data[time], data[value], lw=0.8, color="#31587a", label=value)
    final = frames[frames["status"] == "final"]
    for i, row in enumerate(final.itertuples()):
        ax.axvspan(row.start, row.end, color="#e4572e", alpha=0.25, lw=0,
                   label="frames" if i == 0 else None)
    if threshold is not None:
        ax.axhline(threshold, color="#e4572e", lw=0.8, ls="--", label=f"threshold {threshold:g}")
    ax.set_xlabel(time)
    ax.set_ylabel(value)
    ax.set_title(title or f"{len(final)} frames")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
