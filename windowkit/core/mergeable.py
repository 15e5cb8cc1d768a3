"""The declaration of an operator whose final state on a bounded input is a sum of parts.

Some operators (the linear sketches of a windowed Count-Min) end a bounded input in a state
that does not depend on the order of its rows: the state is the *sum* of the states of any
split of the rows, moved to the input's last time. An engine may then build a part where the
rows are read (no shuffle of rows, no sort), merge the parts of each shard, and finish each
shard once, instead of feeding every shard's rows in order to one operator.

An operator declares it with :meth:`MergeableOperator.merge_plan`, which also says which rows
the final state depends on (the rows of the last blocks of time; earlier rows are only
counted) and, optionally, a SQL aggregate an engine may build a block's part with.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from windowkit.core.validation import check_int

Part = tuple[int | None, bytes, int]
"""A part: ``(block, state bytes, last time)``; ``block`` is the block index of a part the
plan's ``aggregate`` built (its bytes are that aggregate's), None for one
:meth:`~MergeableOperator.part` built."""


@dataclass(frozen=True)
class MergePlan:
    """Which rows a mergeable operator's final state depends on, and how parts may be built.

    Time (int64 µs) is cut into steps of ``tick`` µs and steps into blocks of ``span`` steps:
    the block of a time ``t`` is ``floor(floor(t / tick) / span)``. The final state depends
    only on the rows of the input's last block and the ``lag`` blocks before it; earlier rows
    are counted, nothing more.

    Parameters
    ----------
    tick : int
        µs per step.
    span : int
        Steps per block.
    lag : int
        Blocks before the last one whose rows still count.
    aggregate : tuple of (str, str, tuple), optional
        ``(name, input, arguments)``: the SQL aggregate ``name(input, *arguments)`` over the
        rows of one block of one shard gives that block's part (e.g. ``count_min_sketch``);
        None if only :meth:`MergeableOperator.part` builds parts.

    Examples
    --------
    >>> plan = MergePlan(tick=1000, span=10, lag=1)
    >>> plan.block(25_000), plan.first_block(25_000)
    (2, 1)
    >>> MergePlan(tick=0, span=1, lag=0)
    Traceback (most recent call last):
    ...
    ValueError: `tick` must be an integer in [1, inf); got 0
    """

    tick: int
    span: int
    lag: int
    aggregate: tuple[str, str, tuple[float | int, ...]] | None = None

    def __post_init__(self) -> None:
        check_int("tick", self.tick, 1)
        check_int("span", self.span, 1)
        check_int("lag", self.lag, 0)

    def block(self, time: int) -> int:
        """The block of ``time`` (µs)."""
        return time // self.tick // self.span

    def first_block(self, end: int) -> int:
        """The first block whose rows count when the input ends at ``end`` (µs)."""
        return self.block(end) - self.lag


class MergeableOperator(ABC):
    """Mixin of a :class:`~windowkit.core.operator.StreamOperator` whose bounded-input state
    may be built as a sum of parts (see the module docstring).

    The contract: for rows split in any way into parts, :meth:`finish_parts` of the parts of
    the rows at or after the plan's first block (plus the count of all rows) returns what
    feeding all rows in time order to the operator and calling ``finish()`` with the input
    ending at ``end`` returns.
    """

    @abstractmethod
    def merge_plan(self) -> MergePlan | None:
        """The plan, or None if this instance's state is not a sum of parts."""

    @abstractmethod
    def part(self, batch: pd.DataFrame) -> bytes:
        """The state of ``batch``'s rows (the operator's input columns, in any order)."""

    @abstractmethod
    def finish_parts(self, parts: Sequence[Part], rows: int, end: int) -> pd.DataFrame:
        """The final output from one shard's parts, its number of rows, and the input's last
        time ``end`` (µs, over all shards)."""
