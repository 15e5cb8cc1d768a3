"""Matplotlib figures for the report, returned as PNG bytes (Agg backend, no display).

The report builds its sections in threads (:mod:`windowkit.report.render`) and pyplot is not
thread-safe: every function that draws a figure and saves it is :func:`drawn`, so one figure
is drawn at a time while other sections wait on Spark.
"""

from __future__ import annotations

import functools
import io
import os
import tempfile
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import pandas as pd

#: Figure width in inches and resolution: one column of the page at full width.
WIDTH, DPI = 10.0, 100
#: A figure's margins in inches (left, right, top, bottom): tick labels of a few digits, a
#: title above and an axis label below.
MARGINS = (0.9, 0.25, 0.4, 0.6)
BLUE, ORANGE, GREY = "#31587a", "#e4572e", "#8a8f98"

_DRAWING = threading.RLock()
_Plot = TypeVar("_Plot", bound=Callable[..., Any])


def drawn(plot: _Plot) -> _Plot:
    """``plot`` (a function that draws a figure and returns it saved), run while no other
    thread draws one.

    Examples
    --------
    >>> @drawn
    ... def blank() -> bytes:
    ...     fig, ax = subplots(height=1)
    ...     return to_png(fig)
    >>> blank()[:4]
    b'\\x89PNG'
    """
    @functools.wraps(plot)
    def one_at_a_time(*args: Any, **kwargs: Any) -> Any:
        with _DRAWING:
            return plot(*args, **kwargs)

    return one_at_a_time  # type: ignore[return-value]


def subplots(nrows: int = 1, height: float = 3.4, *, bottom: float = MARGINS[3],
             layout: str | None = None, **kwargs: Any):
    """A figure of ``nrows`` stacked axes on the Agg backend: ``(fig, axes)``.

    Its margins are fixed (:data:`MARGINS`, inches; ``bottom`` for rotated tick labels): the
    tight layout matplotlib would compute measures every text, a draw of its own. A figure
    whose tick labels are the data's (keys of any length) asks for ``layout="tight"``.

    Examples
    --------
    >>> fig, ax = subplots()
    >>> to_png(fig)[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    >>> round(float(fig.subplotpars.bottom) * 3.4, 2)
    0.6
    """
    plt = pyplot()
    fig, axes = plt.subplots(nrows, 1, figsize=(WIDTH, height), dpi=DPI, layout=layout,
                             **kwargs)
    if layout is None:
        fixed_margins(fig, bottom=bottom)
    return fig, axes


def fixed_margins(fig, bottom: float = MARGINS[3]) -> None:
    """Set ``fig``'s margins to :data:`MARGINS` (inches, ``bottom`` apart), whatever its
    size (shrunk on a figure too short for them).

    Examples
    --------
    >>> import matplotlib.figure
    >>> fig = matplotlib.figure.Figure(figsize=(12, 4))
    >>> fixed_margins(fig, bottom=1.0)
    >>> round(float(fig.subplotpars.left) * 12, 2), float(fig.subplotpars.bottom)
    (0.9, 0.25)
    """
    width, height = fig.get_size_inches()
    left, right, top, _ = MARGINS
    # a figure too short for them keeps a fifth of its height for its axes
    shrink = min(1.0, 0.8 * height / (top + bottom))
    fig.subplots_adjust(left=left / width, right=1 - right / width,
                        top=1 - shrink * top / height, bottom=shrink * bottom / height)


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (imported on first use: it takes a second).

    Examples
    --------
    >>> pyplot().get_backend().lower()
    'agg'
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def warm_up() -> threading.Thread:
    """Import matplotlib and draw a first figure in a background thread, started now: a
    report starts it before its Spark jobs, which leave the driver's CPU idle.

    Examples
    --------
    >>> warm_up().join()
    >>> import sys
    >>> "matplotlib.pyplot" in sys.modules
    True
    """
    @drawn
    def first_figure() -> None:
        fig, _ = subplots(height=1)
        to_png(fig)  # the first PNG loads the fonts and the Agg renderer

    thread = threading.Thread(target=first_figure, name="report-matplotlib", daemon=True)
    thread.start()
    return thread


def to_png(fig) -> bytes:
    """The figure as PNG bytes; the figure is closed (pyplot keeps every open figure).

    Examples
    --------
    >>> fig, ax = subplots(height=2)
    >>> len(to_png(fig)) > 1000
    True
    """
    plt = pyplot()
    try:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
    finally:
        plt.close(fig)
    return buffer.getvalue()


def png_of(plot: Callable[[str], Any]) -> bytes:
    """The PNG a path-writing plot function (``windowkit.plots``) writes, as bytes.

    Examples
    --------
    >>> from windowkit.plots import plot_frames
    >>> r = pd.DataFrame({"time": pd.date_range("2024-01-01", periods=3, freq="30s"),
    ...                   "loss_rate": [0.0, 0.5, 0.0]})
    >>> f = pd.DataFrame({"start": [r.time[1]], "end": [r.time[2]], "status": ["final"]})
    >>> png_of(lambda path: plot_frames(r, f, path))[:4]
    b'\\x89PNG'
    """
    with tempfile.TemporaryDirectory() as tmp, _DRAWING:
        path = os.path.join(tmp, "figure.png")
        plot(path)
        with open(path, "rb") as handle:
            return handle.read()


def as_datetime(micros: Any) -> pd.DatetimeIndex:
    """µs since 1970 (UTC) as datetimes for a time axis.

    Examples
    --------
    >>> as_datetime([0, 90_000_000]).strftime("%H:%M:%S").tolist()
    ['00:00:00', '00:01:30']
    """
    return pd.to_datetime(np.asarray(micros, dtype="int64"), unit="us")


def empty_note(ax, text: str) -> None:
    """Write ``text`` in the middle of an axes that has nothing else to show.

    Examples
    --------
    >>> fig, ax = subplots(height=2)
    >>> empty_note(ax, "no detection")
    >>> ax.texts[0].get_text()
    'no detection'
    >>> _ = to_png(fig)
    """
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color=GREY)
    ax.set_xticks([])
    ax.set_yticks([])
