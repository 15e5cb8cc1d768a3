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

    from windowkit.report.figures import fixed_margins

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
    fixed_margins(fig)  # numbers and times label the axes: no layout to compute
    return _save(fig, path, tight=False)


def persistence_matrix(
    reports: pd.DataFrame,
    *,
    item: str,
    value: str = "estimate",
    window_slots: int | None = None,
    top: int = 30,
) -> pd.DataFrame:
    """Items by window end: the ``top`` items reported in the most windows, as a table.

    Rows are items, most often reported first (ties: larger total ``value``, then the item);
    columns are the windows' ``window_end_slot`` in order; a cell is ``value`` (divided by
    ``window_slots`` when given, so 1.0 means every slot of the window) or NaN where the item
    was not reported.

    Parameters
    ----------
    reports : pandas.DataFrame
        Reported rows with ``window_end_slot``, ``item`` and ``value`` columns (rows with a
        null ``window_end_slot``, such as malformed rows, are ignored).
    item, value : str
        Column names.
    window_slots : int, optional
        Window length in slots, to show the fraction of the window's slots.
    top : int
        How many items to keep.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> r = pd.DataFrame({"window_end_slot": [3, 3, 4], "ip": ["a", "b", "b"],
    ...                   "estimate": [2.0, 3.0, 4.0]})
    >>> m = persistence_matrix(r, item="ip", window_slots=4)
    >>> m.index.tolist(), m.columns.tolist(), m.to_numpy().tolist()
    (['b', 'a'], [3, 4], [[0.75, 1.0], [0.5, nan]])
    """
    rows = reports.dropna(subset=["window_end_slot"])
    scale = float(window_slots) if window_slots else 1.0
    grid = rows.pivot_table(index=item, columns="window_end_slot", values=value,
                            aggfunc="max") / scale
    grid.columns = grid.columns.astype("int64")
    order = pd.DataFrame({"n": grid.notna().sum(axis=1), "total": grid.sum(axis=1)})
    order = order.sort_values(["n", "total"], ascending=False, kind="stable")
    return grid.loc[order.index[:top]]


def plot_persistence(
    reports: pd.DataFrame,
    path: str,
    *,
    item: str,
    value: str = "estimate",
    window_slots: int | None = None,
    top: int = 30,
    title: str = "",
) -> str:
    """Heatmap of the most persistent items over the windows; write a PNG to ``path``.

    One row per item (see :func:`persistence_matrix`), one column per window end (labelled
    with ``window_end`` when ``reports`` has it), the colour the item's persistence as a
    fraction of the window's slots (or ``value`` itself without ``window_slots``); blank where
    it was not reported.

    Parameters
    ----------
    reports : pandas.DataFrame
        The output of ``persistent_items`` or ``exact_persistent_items`` (as pandas).
    path : str
        Where to write the PNG.
    item, value, window_slots, top
        As for :func:`persistence_matrix`.
    title : str, optional
        Figure title (default: how many items the heatmap shows, and that they are those
        reported in the most windows).

    Returns
    -------
    str
        ``path``, the PNG written.

    Examples
    --------
    >>> import tempfile, os
    >>> r = pd.DataFrame({"window_end_slot": [3, 3, 4], "ip": ["a", "b", "b"],
    ...                   "estimate": [2.0, 3.0, 4.0]})
    >>> out = plot_persistence(r, os.path.join(tempfile.mkdtemp(), "p.png"), item="ip",
    ...                        window_slots=4)
    >>> os.path.getsize(out) > 1000
    True
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = persistence_matrix(reports, item=item, value=value, window_slots=window_slots,
                              top=top)
    height = 1.6 + 0.22 * max(len(grid), 1)
    fig, ax = plt.subplots(figsize=(12, height), dpi=110)
    image = ax.imshow(grid.to_numpy(dtype=float), aspect="auto", interpolation="nearest",
                      cmap="viridis", vmin=0, vmax=1 if window_slots else None)
    ax.set_yticks(range(len(grid)), [str(v) for v in grid.index], fontsize=7)
    ticks = list(range(0, grid.shape[1], max(1, -(-grid.shape[1] // 8))))
    labels, axis_label = _end_labels(reports, [grid.columns[i] for i in ticks])
    ax.set_xticks(ticks, labels, fontsize=7)
    ax.set_xlabel(axis_label)
    ax.set_ylabel(item)
    label = f"{value} / window slots" if window_slots else value
    fig.colorbar(image, ax=ax, label=label, fraction=0.03, pad=0.01)
    ax.set_title(title or f"the {len(grid)} items reported in the most windows")
    return _save(fig, path)


def _end_labels(reports: pd.DataFrame, slots: list[int]) -> tuple[list[str], str]:
    """Tick labels for window end ``slots``, and the axis label.

    The windows' ``window_end`` times when ``reports`` has them (the time of day alone, with
    the date in the axis label, when every tick falls on one day), else the slot numbers.
    """
    if "window_end" not in reports.columns:
        return [str(slot) for slot in slots], "window end slot"
    rows = reports.dropna(subset=["window_end_slot"]).drop_duplicates("window_end_slot")
    by_slot = dict(zip(rows["window_end_slot"].astype("int64"), rows["window_end"], strict=True))
    ends = [pd.Timestamp(by_slot[slot]) for slot in slots]
    if len({end.date() for end in ends}) == 1:
        return [end.strftime("%H:%M:%S") for end in ends], f"window end ({ends[0].date()})"
    return [end.strftime("%Y-%m-%d %H:%M") for end in ends], "window end"


def _save(fig, path: str, tight: bool = True) -> str:
    """Write ``fig`` to ``path`` as a PNG and free it (pyplot keeps every open figure); with
    ``tight``, its margins fit its labels first."""
    import matplotlib.pyplot as plt

    if tight:
        fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
