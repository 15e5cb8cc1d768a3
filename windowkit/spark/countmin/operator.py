"""The per-site operator: the core windowed Count-Min one DistCM site runs.

Every site's sketch is time-based over the *global* steps (for ``unit="samples"`` one tick is
one position of the whole stream, see :mod:`windowkit.spark.countmin.sites`) and hashes with
Spark's Count-Min family (``hashing="spark"``, seeded by ``seed``), the family of Spark's
``count_min_sketch``: a matrix built in the JVM and one built by the core from the same keys
are equal cell for cell, and every sketch of a job merges with every other.
"""

from __future__ import annotations

from typing import Literal

from windowkit.core.durations import to_micros
from windowkit.core.sketches import (
    PerfectWindowCM,
    ProportionalWindowCM,
    SimpleWindowCM,
    SplitterWindowCM,
)
from windowkit.core.sketches._window import WindowedCountMin
from windowkit.core.sketches.operator import (
    DEFAULT_DELTA,
    DEFAULT_EPSILON,
    WindowedCountMinOperator,
)
from windowkit.core.sketches.spark_format import spark_count_min_counts
from windowkit.core.validation import check_choice, check_in_range, check_int
from windowkit.spark.countmin.sites import POSITION_MICROS

Algorithm = Literal["splitter", "proportional", "simple", "perfect"]
"""The windowed variants: ``"splitter"``, ``"proportional"``, ``"simple"``, ``"perfect"``."""

ALGORITHMS: dict[str, type[WindowedCountMin]] = {
    "splitter": SplitterWindowCM,
    "proportional": ProportionalWindowCM,
    "simple": SimpleWindowCM,
    "perfect": PerfectWindowCM,
}
MERGEABLE = frozenset({"simple", "proportional", "perfect"})
"""Variants whose site state on a batch, with the default cadence, is a sum of parts (the
operator's merge plan): the adapter's mergeable mode sketches the rows of the last windows
where they are read, without a shuffle of rows, and merges the parts per site."""
JVM_SKETCHED = frozenset({"simple", "proportional"})
"""Mergeable variants whose parts are the Count-Min matrices of whole window blocks, which
Spark's own ``count_min_sketch`` builds in the JVM (up to 40 rows)."""

__all__ = ["ALGORITHMS", "JVM_SKETCHED", "MERGEABLE", "Algorithm", "make_operator",
           "spark_count_min_counts"]


def make_operator(
    window: int,
    *,
    unit: str = "samples",
    tick: str | int | None = None,
    algorithm: str = "splitter",
    epsilon: float = DEFAULT_EPSILON,
    delta: float = DEFAULT_DELTA,
    snapshot_every: int | None = None,
    seed: int = 0,
    tau: float | None = None,
    mu: float | None = None,
    end_time: int | None = None,
) -> WindowedCountMinOperator:
    """The core operator one site of :func:`windowed_count_min` runs (validates parameters).

    It is the adapter's factory (each Spark group is one site), so running it on the rows of
    one shard (:func:`count_min_sites`, ``position`` as the time, in ``position`` order)
    reproduces that shard's Spark snapshots with the core alone. Its sketch is always
    time-based (for ``unit="samples"`` one tick is one position of the global stream) and
    hashes with Spark's Count-Min family (``hashing="spark"``).

    Parameters
    ----------
    end_time : int, optional
        The step (µs; :data:`POSITION_MICROS` per position for ``unit="samples"``) the input
        ends at: the final snapshot is of the window ending there.

    Examples
    --------
    >>> op = make_operator(1000, algorithm="proportional", epsilon=0.01, delta=0.25)
    >>> type(op.sketch).__name__, op.sketch.depth, op.sketch.width, op.snapshot_every
    ('ProportionalWindowCM', 2, 272, None)
    >>> make_operator(1000, epsilon=1.5)
    Traceback (most recent call last):
    ...
    ValueError: `epsilon` must be in (0, 1); got 1.5
    """
    check_choice("algorithm", algorithm, tuple(ALGORITHMS))
    check_choice("unit", unit, ("samples", "ticks"))
    check_in_range("epsilon", epsilon, 0, 1, low_open=True, high_open=True)
    check_in_range("delta", delta, 0, 1, low_open=True, high_open=True)
    check_int("window", window, 1, 2**62)
    params: dict[str, float] = {}
    for name, value in (("tau", tau), ("mu", mu)):
        if value is not None:
            if algorithm != "splitter":
                msg = (f"`{name}` is a parameter of algorithm='splitter'; "
                       f"got algorithm={algorithm!r}")
                raise ValueError(msg)
            params[name] = value
    tick_micros = step_micros(unit, tick)
    # Spark's hash family: Simple's and Proportional's matrices are built in the JVM by Spark's
    # count_min_sketch on a batch, and every sketch of a job must hash alike to merge
    sketch = ALGORITHMS[algorithm].from_error(epsilon, delta, window=window, seed=seed,
                                              unit="ticks", hashing="spark", **params)
    return WindowedCountMinOperator(sketch, snapshot_every, tick_micros, end_time)


def step_micros(unit: str, tick: str | int | None) -> int:
    """The µs of one step of a site's clock: ``tick`` for ``unit="ticks"`` (required there,
    refused otherwise), :data:`POSITION_MICROS` for a position of the global stream.

    Examples
    --------
    >>> step_micros("ticks", "1 second"), step_micros("samples", None)
    (1000000, 1000)
    """
    if unit == "ticks":
        if tick is None:
            msg = "`tick` is required with unit='ticks' (e.g. tick='1 second')"
            raise ValueError(msg)
        return to_micros(tick, "tick")
    if tick is not None:
        msg = f"`tick` is only for unit='ticks'; got tick={tick!r} with unit={unit!r}"
        raise ValueError(msg)
    return POSITION_MICROS  # one tick per position of the global stream
