"""Hypothesis strategies and helpers for keyed streams, micro-batches and disorder.

Streams are pandas frames with columns ``key`` (str), ``time`` (int64 microseconds, strictly
increasing per key) and ``value`` (int8 in ``{1, 0, -1}``). Gaps between a key's rows are
``k * step + jitter`` with ``k`` in 1..4 and ``|jitter| <= step // 2``, so a schedule of period
``step`` sees 0, 1, 2 or 3 absent reports per gap, including the half-way rounding cases.

Examples
--------
>>> from hypothesis import given, settings
>>> @settings(max_examples=5, deadline=None)
... @given(keyed_streams(max_keys=2, max_rows=10))
... def check(df):
...     assert list(df.columns) == ["key", "time", "value"]
...     assert (df.groupby("key")["time"].diff().dropna() > 0).all()
>>> check()
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from windowkit.core.durations import Duration

BASE_STEP = 10
"""Default base step (microseconds) of generated streams; use it as the schedule period."""


@st.composite
def _key_rows(
    draw: st.DrawFn,
    max_rows: int,
    with_missing: bool,
    with_gaps: bool,
    step: int,
) -> list[tuple[int, int]]:
    """One key's ``(time, value)`` rows."""
    values = st.sampled_from([1, 1, 0, -1] if with_missing else [1, 1, 0])
    half = step // 2
    if with_gaps:
        gap = st.builds(
            lambda k, j: k * step + j,
            st.sampled_from([1, 1, 1, 2, 3, 4]),
            st.integers(-half, half),
        )
    else:
        # strictly under half a step of jitter: a schedule of period `step` sees no absence
        gap = st.integers(step - (step - 1) // 2, step + (step - 1) // 2)
    n = draw(st.integers(0, max_rows))
    t = draw(st.integers(0, 10 * step))
    rows = []
    for i in range(n):
        if i:
            t += draw(gap)
        rows.append((t, draw(values)))
    return rows


@st.composite
def keyed_streams(
    draw: st.DrawFn,
    max_keys: int = 3,
    max_rows: int = 60,
    with_missing: bool = True,
    with_gaps: bool = True,
    step: int = BASE_STEP,
) -> pd.DataFrame:
    """Strategy for a keyed stream, rows interleaved across keys in time order.

    Parameters
    ----------
    max_keys : int
        At most this many keys ``"k0"``, ``"k1"``, ... (at least one).
    max_rows : int
        At most this many rows per key (a key may have none).
    with_missing : bool
        Whether real rows may carry the missing value ``-1``.
    with_gaps : bool
        Whether gaps may span several steps (absent reports under a schedule of ``step``).
    step : int
        Base step in microseconds.

    Returns
    -------
    pandas.DataFrame
        Columns ``key`` (str), ``time`` (int64), ``value`` (int8), sorted by ``(time, key)``.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=10, deadline=None)
    ... @given(keyed_streams(max_keys=2, max_rows=5))
    ... def check(df):
    ...     assert [str(t) for t in df.dtypes] == ["object", "int64", "int8"]
    ...     assert set(df["value"]) <= {1, 0, -1}
    >>> check()
    """
    n_keys = draw(st.integers(1, max_keys))
    keys, times, values = [], [], []
    for k in range(n_keys):
        for t, v in draw(_key_rows(max_rows, with_missing, with_gaps, step)):
            keys.append(f"k{k}")
            times.append(t)
            values.append(v)
    df = pd.DataFrame(
        {
            "key": pd.Series(keys, dtype="object"),
            "time": pd.Series(times, dtype="int64"),
            "value": pd.Series(values, dtype="int8"),
        }
    )
    return df.sort_values(["time", "key"], kind="stable").reset_index(drop=True)


def durations(
    kinds: tuple[str, ...] = ("rows", "time"),
    max_rows: int = 5,
    max_steps: int = 5,
    step: int = BASE_STEP,
) -> st.SearchStrategy[Duration]:
    """Strategy for a ``min_duration`` or ``fragment_every``.

    Parameters
    ----------
    kinds : tuple of {"rows", "time"}
        Which kinds to draw.
    max_rows : int
        Row durations are 1..``max_rows``.
    max_steps : int
        Time durations are ``step * (1..max_steps)`` microseconds.
    step : int
        Base step in microseconds.

    Returns
    -------
    hypothesis strategy of Duration

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=10, deadline=None)
    ... @given(durations(kinds=("time",)))
    ... def check(d):
    ...     assert d.kind == "time" and d.amount % BASE_STEP == 0
    >>> check()
    """
    options = []
    if "rows" in kinds:
        options.append(st.builds(Duration, st.just("rows"), st.integers(1, max_rows)))
    if "time" in kinds:
        options.append(
            st.builds(Duration, st.just("time"), st.integers(1, max_steps).map(lambda k: k * step))
        )
    if not options:
        msg = f"`kinds` must contain 'rows' and/or 'time'; got {kinds!r}"
        raise ValueError(msg)
    return st.one_of(options)


@st.composite
def nested_levels(draw: st.DrawFn, max_levels: int = 4) -> list[tuple[int, int]]:
    """Multi-granular window levels ``[(range, slide), ...]`` in integer time units, finest
    first: every slide divides the next one, every range is a multiple of its slide and
    longer than the range below it.

    Examples
    --------
    >>> from hypothesis import given
    >>> @given(nested_levels())
    ... def check(levels):
    ...     assert all(r % s == 0 for r, s in levels)
    ...     assert all(b[1] % a[1] == 0 and b[0] > a[0] for a, b in zip(levels, levels[1:]))
    >>> check()
    """
    n = draw(st.integers(1, max_levels))
    slide = draw(st.integers(1, 3))
    levels: list[tuple[int, int]] = []
    prev_range = 0
    for _ in range(n):
        if levels:
            slide *= draw(st.integers(1, 3))
        units = prev_range // slide + 1 + draw(st.integers(0, 3))
        levels.append((units * slide, slide))
        prev_range = units * slide
    return levels


def split_points(n: int, max_batches: int = 6) -> st.SearchStrategy[list[int]]:
    """Strategy for sorted cut points in ``0..n`` (repeats allowed: empty micro-batches).

    Parameters
    ----------
    n : int
        Number of rows to cut.
    max_batches : int
        At most ``max_batches - 1`` cut points.

    Returns
    -------
    hypothesis strategy of list of int

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=10, deadline=None)
    ... @given(split_points(10))
    ... def check(cuts):
    ...     assert cuts == sorted(cuts) and all(0 <= c <= 10 for c in cuts)
    >>> check()
    """
    return st.lists(st.integers(0, n), max_size=max_batches - 1).map(sorted)


def split_frame(df: pd.DataFrame, cut_points: list[int]) -> list[pd.DataFrame]:
    """Cut ``df`` into ``len(cut_points) + 1`` consecutive micro-batches, row order preserved.

    Parameters
    ----------
    df : pandas.DataFrame
        The stream, in arrival order.
    cut_points : list of int
        Sorted positions in ``0..len(df)``; repeats give empty batches.

    Returns
    -------
    list of pandas.DataFrame
        Pieces whose concatenation is ``df``; each piece has a fresh ``RangeIndex``.

    Examples
    --------
    >>> df = pd.DataFrame({"time": range(5)})
    >>> [piece["time"].tolist() for piece in split_frame(df, [2, 2, 4])]
    [[0, 1], [], [2, 3], [4]]
    >>> split_frame(df, [3, 1])
    Traceback (most recent call last):
    ...
    ValueError: `cut_points` must be sorted and within 0..5; got [3, 1]
    """
    cuts = list(cut_points)
    if cuts != sorted(cuts) or any(c < 0 or c > len(df) for c in cuts):
        msg = f"`cut_points` must be sorted and within 0..{len(df)}; got {cuts!r}"
        raise ValueError(msg)
    bounds = [0, *cuts, len(df)]
    return [df.iloc[a:b].reset_index(drop=True) for a, b in pairwise(bounds)]


def run_in_batches(factory: Callable[[], Any], df: pd.DataFrame,
                   cut_points: list[int]) -> pd.DataFrame:
    """Feed ``df`` to a fresh operator as the micro-batches of :func:`split_frame`, through a
    ``to_bytes``/``from_bytes`` round trip between batches, then ``finish()``; all output.

    Parameters
    ----------
    factory : callable
        Builds the operator (anything with ``process``, ``finish``, ``to_bytes`` and a
        ``from_bytes`` class method).
    df : pandas.DataFrame
        The stream, rows in time order.
    cut_points : list of int
        Where to cut it (see :func:`split_frame`).

    Returns
    -------
    pandas.DataFrame
        The concatenated output of every call.

    Examples
    --------
    >>> from windowkit.core.frames import ThresholdFramer
    >>> rows = pd.DataFrame({"key": "a", "time": [1, 2, 3, 4], "value": [1, 1, 0, 1]})
    >>> out = run_in_batches(lambda: ThresholdFramer(min_duration="2 rows"), rows, [1, 3])
    >>> out[["start", "end", "status"]].values.tolist()
    [[1, 3, 'final']]
    """
    operator = factory()
    outputs = []
    for piece in split_frame(df, cut_points):
        outputs.append(operator.process(piece))
        operator = type(operator).from_bytes(operator.to_bytes())
    outputs.append(operator.finish())
    return pd.concat(outputs, ignore_index=True)


def shuffled_within(
    df: pd.DataFrame, max_delay: int, seed: int = 0, time_col: str = "time"
) -> pd.DataFrame:
    """Reorder rows as they would arrive when each is delayed by at most ``max_delay``.

    Each row gets a random delay in ``0..max_delay`` (event times unchanged) and rows are sorted
    by ``time + delay`` (stably). Hence a row never arrives after a row whose event time exceeds
    its own by more than ``max_delay``: with the watermark ``max(time seen) - max_delay`` no row
    is late.

    Parameters
    ----------
    df : pandas.DataFrame
        The stream.
    max_delay : int
        Largest event-time delay, in the units of ``time_col`` (microseconds).
    seed : int
        Seed of the delays.
    time_col : str
        Name of the event-time column.

    Returns
    -------
    pandas.DataFrame
        The same rows in arrival order, with a fresh ``RangeIndex``.

    Examples
    --------
    >>> df = pd.DataFrame({"time": range(0, 100, 10)})
    >>> out = shuffled_within(df, max_delay=25, seed=1)
    >>> sorted(out["time"]) == list(df["time"])
    True
    >>> bool((out["time"].cummax() - out["time"] <= 25).all())
    True
    """
    if max_delay < 0:
        msg = f"`max_delay` must be >= 0; got {max_delay!r}"
        raise ValueError(msg)
    rng = np.random.default_rng(seed)
    delay = rng.integers(0, max_delay, size=len(df), endpoint=True)
    arrival = df[time_col].to_numpy(dtype="int64") + delay
    order = np.argsort(arrival, kind="stable")
    return df.iloc[order].reset_index(drop=True)
