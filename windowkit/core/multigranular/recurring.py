"""Recurring items over a multi-granular window (paper IV.C), with per-level counts.

An item is *recurring* at a report of level ``k`` (a window of the level; see
:mod:`windowkit.core.multigranular.spec` for which instants it holds) if it occurs at least
once in every disjoint interval ``D_j`` for ``j <= k``: ``D_0`` is level 0's window and ``D_j``
level ``j``'s window minus level ``j - 1``'s (the paper's ``[t_j, t_(j-1))``), all windows
ending together. At the widest level that is the paper's definition.

Each (key, item) pair has its own stairwise chain of *counts* per cell: the paper's bitmaps
with "frequency counts instead of bits" (a bit is ``count > 0``), so the per-level counts come
for free and rank the items (e.g. persistent network threats). The output has one row per key,
item and report where the item recurs, with ``count`` its occurrences in the level's scope.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from windowkit.core.multigranular.aggregator import (
    REPORT_COLUMNS,
    ChainOperator,
    ReportMode,
    _pack,
    _unpack,
    make_spec,
)
from windowkit.core.multigranular.cells import N
from windowkit.core.multigranular.spec import MultiGranularSpec
from windowkit.core.multigranular.state import ChainState, Reports
from windowkit.core.operator import KEY, TIME
from windowkit.core.ordering import factorize_keys
from windowkit.core.registry import register
from windowkit.core.validation import check_choice

ITEM = "item"


@register()
class RecurringItems(ChainOperator):
    """Items occurring in every disjoint interval of the levels, per key.

    Input rows: ``key``, ``time`` (int64 µs), ``item``; or pre-aggregated counts with a
    ``cell_n`` column (one row per key, item and finest granule).

    Parameters
    ----------
    window, levels, origin, report, closed
        As for :class:`~windowkit.core.multigranular.aggregator.MultiGranularAggregator`.

    Examples
    --------
    The paper's Fig. 4 levels ``<4,1>, <8,2>, <16,4>``:

    >>> rec = RecurringItems(levels=[(4, 1), (8, 2), (16, 4)], closed="right")
    >>> rows = pd.DataFrame({"key": "s", "time": [1, 6, 9, 10, 12, 12],
    ...                      "item": [4, 4, 4, 7, 4, 7]})
    >>> out = pd.concat([rec.process(rows), rec.finish()])
    >>> out[(out.level == 2) & (out.window_end == 13)][["item", "count"]].values.tolist()
    [['4', 4]]
    """

    FORMAT_TAG = "MGRRECUR"
    FORMAT_VERSION = 1

    def __init__(
        self,
        window: str | MultiGranularSpec | None = None,
        levels: list | None = None,
        origin: int = 0,
        report: ReportMode = "periodic",
        closed: str = "left",
    ) -> None:
        check_choice("report", report, ("periodic", "continuous"))
        self.spec = make_spec(window, levels, origin, closed)
        self.report = report
        effective = self.spec.continuous() if report == "continuous" else self.spec
        self._shift = effective.shift
        self._state = ChainState(effective.chain(), 1)
        self.before_origin = 0

    @property
    def output_schema(self) -> list[tuple[str, str]]:
        """Key, item, level, range, slide, window bounds, count."""
        return [REPORT_COLUMNS[0], (ITEM, "string"), *REPORT_COLUMNS[1:], ("count", "int64")]

    @property
    def input_schema(self) -> list[tuple[str, str]]:
        """The rows' ``item``, as text.

        Examples
        --------
        >>> RecurringItems(levels=[(4, 1)]).input_schema
        [('item', 'string')]
        """
        return [(ITEM, "string")]

    @property
    def n_pairs(self) -> int:
        """Number of (key, item) pairs seen so far."""
        return len(self._state.keys)

    def process(self, batch: pd.DataFrame) -> pd.DataFrame:
        """Consume rows in time order; return the recurring items of reports made final.

        Examples
        --------
        >>> rec = RecurringItems(levels=[(1, 1), (2, 1)])
        >>> rec.process(pd.DataFrame({"key": "a", "time": [1, 2, 3], "item": ["x"] * 3})
        ...             )[["item", "level", "window_end", "count"]].values.tolist()
        [['x', 0, 2, 1], ['x', 0, 3, 1], ['x', 1, 3, 2]]
        """
        if not len(batch):
            return self.empty_output()
        batch = batch.iloc[np.argsort(batch[TIME].to_numpy(), kind="stable")]
        time = self._chain_times(batch[TIME].to_numpy().astype(np.int64, copy=False))
        st = self._state
        keep = time >= st.spec.origin
        if not keep.all():
            self.before_origin += int((~keep).sum())
            batch, time = batch[keep], time[keep]
            if not len(time):
                return self.empty_output()
        keys = batch[KEY] if KEY in batch else pd.Series(np.zeros(len(batch), dtype=np.int64))
        kc, ku = factorize_keys(keys)
        ic, iu = factorize_keys(batch[ITEM])
        iu = np.asarray([str(x) for x in iu.tolist()], dtype=object)
        pair_codes, pair_uniques = pd.factorize(kc * len(iu) + ic)
        pairs = np.empty(len(pair_uniques), dtype=object)
        pairs[:] = [(ku[p // len(iu)], iu[p % len(iu)]) for p in pair_uniques.tolist()]
        slot = st.slots(pairs)[pair_codes]
        frontier = int(time[-1]) - 1
        if "cell_n" in batch:
            cells = batch["cell_n"].to_numpy(np.float64).reshape(-1, 1)
            reports = st.fold_cells(slot, time, cells, frontier)
        else:
            reports = st.fold_rows(slot, time, None, frontier)
        return self._settle(reports)

    def _frame(self, rep: Reports) -> pd.DataFrame:
        keep = rep.extras[:, 2] > 0 if len(rep) else np.zeros(0, dtype=bool)
        if not keep.any():
            return self.empty_output()
        spec = self._state.spec
        level = rep.level[keep]
        ranges = np.array([lv.range for lv in spec.levels], dtype=np.int64)[level]
        start, end = self._window_bounds(rep.granule[keep], ranges)
        slides = np.array([lv.slide for lv in spec.levels], dtype=np.int64)[level]
        pairs = self._state.keys
        slots = rep.slot[keep].tolist()
        return pd.DataFrame({
            KEY: np.asarray([pairs[s][0] for s in slots], dtype=object),
            ITEM: np.asarray([pairs[s][1] for s in slots], dtype=object),
            "level": level.astype(np.int64), "range": ranges, "slide": slides,
            "window_start": start, "window_end": end,
            "count": rep.cells[keep, N].astype(np.int64),
        })

    def to_bytes(self) -> bytes:
        """Serialize parameters and state.

        Examples
        --------
        >>> rec = RecurringItems(levels=[(2, 1)])
        >>> _ = rec.process(pd.DataFrame({"key": "a", "time": [1], "item": ["x"]}))
        >>> RecurringItems.from_bytes(rec.to_bytes()).n_pairs
        1
        """
        meta = {"levels": [[lv.range, lv.slide] for lv in self.spec.levels],
                "origin": self.spec.origin, "closed": self.spec.closed, "report": self.report}
        return _pack(self, meta)

    @classmethod
    def from_bytes(cls, blob: bytes) -> RecurringItems:
        """Rebuild from :meth:`to_bytes` output; corrupt bytes raise StateFormatError."""
        def build(meta: dict) -> RecurringItems:
            # state written before windows could be closed on the left had the paper's scopes
            return cls(levels=[tuple(p) for p in meta["levels"]], origin=meta["origin"],
                       report=meta["report"], closed=meta.get("closed", "right"))
        return _unpack(cls, blob, build)
