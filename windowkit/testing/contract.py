"""One small example of every stateful class in windowkit's registry, for the contract suite.

``tests/test_contract.py`` runs the checks every stateful class keeps (bytes and pickle round
trips, split invariance with a bytes round trip between the parts, disorder within the
watermark, rows tied at one time in any arrival order, merge laws, corrupt bytes refused or
harmless) over every class :func:`windowkit.core.registry.state_classes` finds, with the
example registered here under the class's format tag. A registered class without an example
fails the suite.

Examples
--------
>>> ex = EXAMPLES["CMVANILA"]
>>> sketch = ex.make()
>>> for batch in ex.batches:
...     _ = ex.feed(sketch, batch)
>>> ex.view(sketch)[:3]
[24, 12, 6]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from windowkit.core.frames import (
    AggregateFramer,
    BoundaryFramer,
    CustomFramer,
    DeltaFramer,
    IncreasingTrend,
    ThresholdFramer,
)
from windowkit.core.frames._engine import SequenceFramer, SequenceFrameSpec
from windowkit.core.multigranular import MultiGranularAggregator, RecurringItems
from windowkit.core.operator import EventTimeRunner, StreamOperator
from windowkit.core.persistence import (
    ExactPersistence,
    PersistentItemsSketch,
    SlidingPersistentItemsSketch,
)
from windowkit.core.persistence.operator import (
    ExactPersistentItemsOperator,
    PersistentItemsOperator,
)
from windowkit.core.sketches import (
    CountMin,
    PerfectWindowCM,
    ProportionalWindowCM,
    SimpleWindowCM,
    SplitterWindowCM,
)
from windowkit.core.sketches.coordinator import HeavyHittersOperator
from windowkit.core.sketches.operator import WindowedCountMinOperator
from windowkit.core.widening import EpisodeDetector, WindowWidening


@dataclass(frozen=True)
class Example:
    """A configured instance of a class and a stream of batches to feed it.

    Parameters
    ----------
    make : callable
        A fresh, configured instance.
    batches : tuple
        The stream, cut into batches (rows of an operator, arguments of a sketch's
        ``update``), in order.
    feed : callable
        ``feed(obj, batch)``: give ``obj`` one batch; returns its output (or None).
    finish : callable
        ``finish(obj)``: the output once the input ends (or None).
    view : callable
        ``view(obj)``: what the object reports, comparable with ``==``.
    shards : tuple of tuple, optional
        For a mergeable class: three shards' batches whose states merge (``merge``).
    max_delay : int, optional
        For an operator: rows delayed by up to this much, with the watermark that far behind
        the latest row, give the output of the rows in order.
    settled : callable, optional
        The part of an output that must not depend on when watermarks came (default: all
        of it).
    """

    make: Callable[[], Any]
    batches: tuple[Any, ...]
    feed: Callable[[Any, Any], Any]
    finish: Callable[[Any], Any]
    view: Callable[[Any], Any]
    shards: tuple[tuple[Any, ...], ...] | None = None
    max_delay: int | None = None
    settled: Callable[[pd.DataFrame], pd.DataFrame] = lambda out: out

    def whole(self) -> Any:
        """All batches as one batch.

        Examples
        --------
        >>> len(EXAMPLES["MGRAGGR"].whole()) == sum(len(b) for b in EXAMPLES["MGRAGGR"].batches)
        True
        """
        first = self.batches[0]
        if isinstance(first, pd.DataFrame):
            return pd.concat(self.batches, ignore_index=True)
        return tuple(np.concatenate([np.asarray(b[i]) for b in self.batches])
                     for i in range(len(first)))


def _rows(n: int, seed: int, **columns: Callable[[np.random.Generator, int], Any]) -> pd.DataFrame:
    """``n`` rows at distinct increasing times (the contract suite makes ties of its own, to
    check that their arrival order does not matter)."""
    rng = np.random.default_rng(seed)
    time = np.cumsum(rng.integers(1, 4, size=n)).astype(np.int64)
    return pd.DataFrame({"time": time, **{name: make(rng, n) for name, make in columns.items()}})


def _cut(frame: pd.DataFrame, *at: int) -> tuple[pd.DataFrame, ...]:
    bounds = [0, *at, len(frame)]
    return tuple(frame.iloc[a:b].reset_index(drop=True) for a, b in zip(bounds, bounds[1:],
                                                                        strict=False))


def _keys(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.choice(np.array(["a", "b", "c"], dtype=object), size=n)


def _values(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 6, size=n).astype(np.float64)


def _items(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.choice(np.array(["x", "y", "z", "w"], dtype=object), size=n, p=[.5, .2, .2, .1])


def _calls(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.choice(np.array(["a", "b", "c"], dtype=object), size=n)


FRAME_ROWS = _rows(60, 1, key=_keys, value=_values)
ITEM_ROWS = _rows(60, 2, key=_keys, item=_items, value=_values)
CALL_ROWS = _rows(60, 3, key=_keys, call=_calls)


def operator_example(make: Callable[[], StreamOperator], rows: pd.DataFrame,
                     max_delay: int = 5,
                     settled: Callable[[pd.DataFrame], pd.DataFrame] | None = None) -> Example:
    """An operator fed ``rows`` in three batches; its output is the contract's result.

    Parameters
    ----------
    make : callable
        Builds the operator.
    rows : pandas.DataFrame
        Its input, in time order.
    max_delay : int
        See :class:`Example`.
    settled : callable, optional
        See :class:`Example`.

    Returns
    -------
    Example

    Examples
    --------
    >>> ex = operator_example(lambda: DeltaFramer(2.0), FRAME_ROWS)
    >>> len(ex.batches)
    3
    """
    return Example(make, _cut(rows, len(rows) // 3, 2 * len(rows) // 3),
                   feed=lambda op, batch: op.process(batch), finish=lambda op: op.finish(),
                   view=lambda op: None, max_delay=max_delay,
                   settled=settled or (lambda out: out))


def _runner_example() -> Example:
    rows = FRAME_ROWS.sample(frac=1.0, random_state=4).reset_index(drop=True)
    return Example(lambda: EventTimeRunner(ThresholdFramer(min_duration="2 rows")),
                   _cut(rows.assign(value=rows.value > 2), 20, 40),
                   feed=lambda runner, batch: runner.push(batch)[0],
                   finish=lambda runner: runner.finish(), view=lambda runner: None)


ITEMS = np.array(["a", "b", "a", "c", "a", "d", "b", "a"] * 6, dtype=object)


def _sketch_example(make: Callable[[], Any], shards: bool = True) -> Example:
    probe = np.array(["a", "b", "c", "d", "e"], dtype=object)
    split = (ITEMS[:16], ITEMS[16:30], ITEMS[30:])
    return Example(make, tuple((part,) for part in split),
                   feed=lambda sk, batch: sk.update(*batch), finish=lambda sk: None,
                   view=lambda sk: sk.estimate(probe).tolist(),
                   # equal lengths: count-based windows merge at the same step only
                   shards=tuple(((ITEMS[i::3][:16],),) for i in range(3)) if shards else None)


def _persistent_view(sk: Any) -> list:
    table = sk.persistence() if isinstance(sk, ExactPersistence) else sk.persistent_items()
    return table.values.tolist()


def _persistence_example(make: Callable[[], Any]) -> Example:
    rng = np.random.default_rng(5)
    items = rng.integers(0, 12, size=80)
    slots = np.sort(rng.integers(0, 8, size=80))
    shard_of = items % 3  # item-disjoint shards
    return Example(make, ((items[:30], slots[:30]), (items[30:55], slots[30:55]),
                          (items[55:], slots[55:])),
                   feed=lambda sk, batch: sk.update(*batch), finish=lambda sk: None,
                   view=_persistent_view,
                   shards=tuple(((items[shard_of == s], slots[shard_of == s]),)
                                for s in range(3)))


def _sketch(cls: type, **params: Any) -> Callable[[], Any]:
    return lambda: cls(16, depth=2, width=8, **params)


def _snapshot_rows() -> pd.DataFrame:
    """Three shards' snapshots of their items (:data:`ITEM_ROWS`' keys as shards, its items
    as keys 0 to 3), one per row at the row's time, every sketch hashing alike."""
    shards, keys = {"a": 0, "b": 1, "c": 2}, {"x": 0, "y": 1, "z": 2, "w": 3}
    rows, sketches = [], {}
    for seq, (time, key, item) in enumerate(ITEM_ROWS[["time", "key", "item"]].itertuples(
            index=False)):
        sketch = sketches.setdefault(shards[key], CountMin(2, 8, seed=1))
        sketch.update([keys[item]])
        rows.append((time, shards[key], seq, sketch.to_bytes(), time - 30, time + 1))
    return pd.DataFrame(rows, columns=["time", "shard", "seq", "sketch", "window_start",
                                       "window_end"])


#: The example of each registered stateful class, by format tag.
EXAMPLES: dict[str, Example] = {
    "RUNNER": _runner_example(),
    "THRFRAME": operator_example(lambda: ThresholdFramer(min_duration="2 rows",
                                                         fragment_every="3 rows"),
                                 FRAME_ROWS.assign(value=FRAME_ROWS.value > 2)),
    "SEQFRAME": operator_example(lambda: SequenceFramer(IncreasingTrend(),
                                                        SequenceFrameSpec.create("2 rows")),
                                 FRAME_ROWS),
    "DLTFRAME": operator_example(lambda: DeltaFramer(2.0), FRAME_ROWS),
    "BNDFRAME": operator_example(lambda: BoundaryFramer(2.0), FRAME_ROWS),
    "AGGFRAME": operator_example(lambda: AggregateFramer("sum", ">", 6.0), FRAME_ROWS),
    "CUSFRAME": operator_example(lambda: CustomFramer(IncreasingTrend(), min_duration="2 rows"),
                                 FRAME_ROWS),
    "MGRAGGR": operator_example(lambda: MultiGranularAggregator(
        levels=[(4, 2), (8, 4), (24, 8)], aggregates=["count", "sum", "mean", "variance"],
        regression=True, distinct=True), ITEM_ROWS),
    "MGRRECUR": operator_example(lambda: RecurringItems(levels=[(4, 2), (8, 4)]), ITEM_ROWS),
    "PWWIDEN": operator_example(lambda: WindowWidening(EpisodeDetector("a\nb"), base=4,
                                                       max_length=3, levels=3), CALL_ROWS),
    # a watermark sends a snapshot of its own (per micro-batch): the periodic ones are settled
    "CMOPERAT": operator_example(lambda: WindowedCountMinOperator(
        SimpleWindowCM(10, depth=2, width=8), snapshot_every=7), ITEM_ROWS[["time", "item"]],
        settled=lambda out: out.loc[out.n_seen % 7 == 0, ["n_seen", "time", "sketch"]]),
    "CMHEAVYH": operator_example(lambda: HeavyHittersOperator(np.arange(5), phi=0.2),
                                 _snapshot_rows()),
    "PERSOPR": operator_example(lambda: PersistentItemsOperator(
        alpha=0.5, epsilon=0.2, window=4, slot_length=10), ITEM_ROWS[["time", "item"]]),
    "PERSEXOP": operator_example(lambda: ExactPersistentItemsOperator(
        alpha=0.5, window=4, slot_length=10), ITEM_ROWS[["time", "item"]]),
    "CMVANILA": _sketch_example(lambda: CountMin(2, 8, seed=1)),
    "CMPERFCT": _sketch_example(_sketch(PerfectWindowCM)),
    "CMSIMPLE": _sketch_example(_sketch(SimpleWindowCM)),
    "CMPROPOR": _sketch_example(_sketch(ProportionalWindowCM)),
    "CMSPLITR": _sketch_example(_sketch(SplitterWindowCM, tau=0.2, mu=1.5), shards=False),
    "PERSFIX": _persistence_example(lambda: PersistentItemsSketch(alpha=0.5, epsilon=0.2, n=8,
                                                                  delta=0.1, seed=3)),
    "PERSSLD": _persistence_example(lambda: SlidingPersistentItemsSketch(alpha=0.5, epsilon=0.2,
                                                                         n=4, seed=3)),
    "PERSEXA": _persistence_example(lambda: ExactPersistence(n=8, window="sliding")),
}
