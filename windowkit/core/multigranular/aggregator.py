"""Multi-grained aggregation and online regression over a multi-granular window (paper IV.A-B).

One :class:`MultiGranularAggregator` holds the stairwise chains of many keys. Per key and
level, a *report* is issued for every window of the level that holds at least one row of the
key, the rule of Spark's ``window()``: by default (``closed="left"``) the windows of
``window(time, range, slide)``, ``[s, s + w_k)`` with ``s - t0`` a whole multiple of ``b_k``;
with ``closed="right"`` the paper's scopes ``(tc - w_k, tc]`` at the instants ``tc`` where the
level slides (``(tc - t0) mod b_k = 0``). Either way a report gives its window as
``[window_start, window_end)``. A report is final, and emitted, once every row before its
``window_end`` has arrived: when the operator sees a later row, a watermark at or past it, or
the end of the input. So the reports do not depend on how the stream is cut into batches.

Aggregates: ``count``, ``sum``, ``mean``, ``min``, ``max``, ``variance`` and ``stddev`` (the
sample ones, like Spark's; NaN under two rows). Min and max are kept per cell and merged over
the level's cells at each report, the paper's rescan bounded by the cells of a level.

Time-decayed aggregates (``weights``, one per level): the report of level ``k`` also gives
``decayed_sum = sum_j<=k weights[j] * sum(values in D_j)`` and ``decayed_count`` likewise, with
``D_0`` level 0's scope and ``D_j`` level ``j``'s scope minus level ``j - 1``'s (the paper's
disjoint ``[t_j, t_(j-1))``), all at the same ``tc``; ``decayed_mean`` is their ratio.

Online linear regression (``regression=True``), equations 6 and 7 of the paper with each *row*
a point ``(t, value)``: instants with no row contribute no point (they are not filled with the
latest value, which at microsecond instants would weigh a value by how long it went unrevised),
and rows sharing an instant are separate points. ``slope`` is in value units per second and
``intercept`` is the fitted value at the window's last instant (``window_end`` - 1 µs), i.e.
time is measured in seconds relative to it, so doubles keep their precision whatever the epoch.
The sums are held as centred co-moments per cell and merged exactly (no subtraction of large
sums). NaN when all points of the scope share one instant.

Distinct counts (``distinct=True``, beyond the paper): ``distinct``, the number of distinct
``item`` values in each report's scope, estimated by merging per-granule HyperLogLog sketches
along the chain (:mod:`windowkit.core.multigranular.distinct`; ``distinct_precision`` is the
sketches' ``lgConfigK``).

Continuous reporting: ``report="continuous"`` makes every level report at every finest slide
(each level's range, the finest slide); :meth:`MultiGranularAggregator.horizon` gives the state
of any horizon on request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from windowkit.core.multigranular.cells import (
    BASIC_FIELDS,
    MAX,
    MIN,
    MT,
    MV,
    N_FIELDS,
    STT,
    STV,
    SUM,
    SVV,
    N,
    empty_cells,
    merge_into,
)
from windowkit.core.multigranular.chain import NONE
from windowkit.core.multigranular.distinct import (
    DEFAULT_PRECISION,
    DistinctSketches,
    check_precision,
)
from windowkit.core.multigranular.spec import MultiGranularSpec
from windowkit.core.multigranular.state import END_OF_INPUT, ChainState, Reports
from windowkit.core.operator import KEY, TIME, StreamOperator
from windowkit.core.ordering import factorize_keys, key_time_order
from windowkit.core.registry import register
from windowkit.core.serialization import StateFormatError, pack_state, unpack_state
from windowkit.core.validation import check_choice

ReportMode = Literal["periodic", "continuous"]
"""``"periodic"``: each level reports when it slides; ``"continuous"``: at every finest slide."""

AGGREGATES = ("count", "sum", "mean", "min", "max", "variance", "stddev")
DEFAULT_AGGREGATES = ("count", "sum", "mean", "min", "max")
VALUE = "value"
#: Input column whose distinct values ``distinct=True`` counts.
ITEM = "item"
#: Input column of pre-built granule sketches (DataSketches HLL bytes, e.g. Spark's
#: ``hll_sketch_agg``) for ``distinct=True`` with pre-aggregated cells.
CELL_HLL = "cell_hll"
#: Columns of pre-aggregated input cells (one row per key and finest granule; times of the
#: moments relative to the granule's end instant, in µs).
CELL_COLUMNS = ("cell_n", "cell_sum", "cell_min", "cell_max", "cell_mean", "cell_m2",
                "cell_t_mean", "cell_t_m2", "cell_tv")
#: How many leading :data:`CELL_COLUMNS` each kind of report reads: count, sum, mean, min,
#: max and the decayed aggregates need the first four; variance and stddev the value's
#: moments too; regression all of them.
_CELLS_PLAIN, _CELLS_VARIANCE, _CELLS_REGRESSION = 4, 6, len(CELL_COLUMNS)
REPORT_COLUMNS = [(KEY, "string"), ("level", "int64"), ("range", "duration"),
                  ("slide", "duration"),
                  ("window_start", "timestamp"), ("window_end", "timestamp")]


@dataclass(frozen=True)
class AggregatorConfig:
    """Validated parameters of a :class:`MultiGranularAggregator`.

    Examples
    --------
    >>> spec = MultiGranularSpec.from_levels([("1 minute", "1 second")])
    >>> AggregatorConfig(spec, aggregates=("count", "median"))
    Traceback (most recent call last):
    ...
    ValueError: `aggregates` must be one of 'count', 'sum', 'mean', 'min', 'max', 'variance', 'stddev'; got 'median'
    """  # noqa: E501

    spec: MultiGranularSpec
    aggregates: tuple[str, ...] = DEFAULT_AGGREGATES
    regression: bool = False
    weights: tuple[float, ...] | None = None
    report: ReportMode = "periodic"
    distinct: bool = False
    distinct_precision: int = DEFAULT_PRECISION

    def __post_init__(self) -> None:
        if isinstance(self.aggregates, str) or not isinstance(self.aggregates, tuple):
            msg = f"`aggregates` must be a tuple of names; got {self.aggregates!r}"
            raise ValueError(msg)
        for name in self.aggregates:
            check_choice("aggregates", name, AGGREGATES)
        if len(set(self.aggregates)) != len(self.aggregates):
            msg = f"`aggregates` must not repeat a name; got {self.aggregates!r}"
            raise ValueError(msg)
        check_choice("report", self.report, ("periodic", "continuous"))
        if not isinstance(self.distinct, bool):
            msg = f"`distinct` must be True or False; got {self.distinct!r}"
            raise ValueError(msg)
        check_precision(self.distinct_precision)
        if self.weights is not None:
            w = self.weights
            if len(w) != self.spec.n_levels:
                msg = (f"`weights` must give one weight per level ({self.spec.n_levels}); "
                       f"got {len(w)}")
                raise ValueError(msg)
            for k, x in enumerate(w):
                if not isinstance(x, (int, float)) or not np.isfinite(x) or x < 0:
                    msg = f"`weights[{k}]` must be a finite number >= 0; got {x!r}"
                    raise ValueError(msg)

    @property
    def cell_columns(self) -> tuple[str, ...]:
        """The :data:`CELL_COLUMNS` that pre-aggregated input must give for these reports;
        the others may be left out (a pre-aggregation then computes less).

        Examples
        --------
        >>> spec = MultiGranularSpec.from_levels([("1 minute", "1 second")])
        >>> AggregatorConfig(spec, aggregates=("count", "mean")).cell_columns
        ('cell_n', 'cell_sum', 'cell_min', 'cell_max')
        >>> len(AggregatorConfig(spec, regression=True).cell_columns)
        9
        """
        if self.regression:
            return CELL_COLUMNS[:_CELLS_REGRESSION]
        if {"variance", "stddev"} & set(self.aggregates):
            return CELL_COLUMNS[:_CELLS_VARIANCE]
        return CELL_COLUMNS[:_CELLS_PLAIN]

    @property
    def effective_spec(self) -> MultiGranularSpec:
        """The specification the chain runs (continuous: every level at the finest slide)."""
        return self.spec.continuous() if self.report == "continuous" else self.spec


def make_spec(window: str | MultiGranularSpec | None, levels: list | None,
              origin: int | str = 0, closed: str = "left") -> MultiGranularSpec:
    """A specification from the paper's clause or from ``levels`` (exactly one of them).

    Examples
    --------
    >>> make_spec(None, [("1 minute", "1 second")]).levels[0].slide
    1000000
    """
    if isinstance(window, MultiGranularSpec):
        return window
    if (window is None) == (levels is None):
        msg = "give exactly one of `window` (the RANGES ... SLIDES ... clause) and `levels`"
        raise ValueError(msg)
    if window is not None:
        return MultiGranularSpec.parse(window, origin, closed)
    return MultiGranularSpec.from_levels(levels, origin, closed)


class ChainOperator(StreamOperator):
    """What the multi-granular operators share: a :class:`ChainState` in ``_state`` whose
    reports ``_frame`` turns into output rows, settled by the watermark or the input's end.

    The chain runs the paper's specification (:meth:`MultiGranularSpec.chain`) on times moved
    by ``_shift`` µs: every time and watermark coming in is moved forward by it, and every
    instant going out back."""

    _state: ChainState
    _shift: int = 0
    # keys are only grouped and compared, and given back as they came
    INTEGER_KEYS = True

    @property
    def derived_outputs(self) -> dict[str, str]:
        """``range``, ``slide`` and ``window_start``: functions of ``level`` and ``window_end``.

        Examples
        --------
        >>> agg = MultiGranularAggregator(levels=[(4, 1), (8, 2)], closed="right")
        >>> agg.derived_outputs["slide"]
        'CASE level WHEN 0 THEN 1 WHEN 1 THEN 2 END'
        """
        spec = self._state.spec
        level = "CASE level " + " ".join(f"WHEN {k} THEN {{}}" for k in range(spec.n_levels))
        level += " END"
        ranges = level.format(*[int(lv.range) for lv in spec.levels])
        first = self._first_instant()
        # (greatest() skips nulls: a rejected row's window_start would be `first`)
        start = (f"CASE WHEN window_end IS NOT NULL THEN greatest({first}, window_end - "
                 f"{ranges}) END")
        return {"range": ranges, "slide": level.format(*[int(lv.slide) for lv in spec.levels]),
                "window_start": start}

    def _window_bounds(self, granule: np.ndarray, ranges: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """``window_start`` and ``window_end`` (µs) of reports at chain ``granule`` ends."""
        spec = self._state.spec
        end = spec.origin + granule * spec.finest_slide + 1 - self._shift
        return np.maximum(self._first_instant(), end - ranges), end

    @property
    def first_instant(self) -> int:
        """The earliest time a row may have to be in a window: an engine reports an earlier
        row as malformed (the operator would only count it in ``before_origin``).

        Examples
        --------
        >>> MultiGranularAggregator(levels=[(4, 1)], closed="right", origin=10).first_instant
        10
        """
        return self._first_instant()

    def _first_instant(self) -> int:
        """The earliest instant a window may start at (the given specification's
        :attr:`~MultiGranularSpec.first_instant`: the chain's origin, moved back)."""
        return int(self._state.spec.origin) - self._shift

    def _chain_times(self, time: np.ndarray) -> np.ndarray:
        """Input times on the chain's clock; refuses times before reports already final."""
        time = time + self._shift if self._shift else time
        frontier = self._state.frontier
        if frontier is not None and len(time) and time.min() <= frontier:
            msg = (f"`time` went backwards: {int(time.min()) - self._shift} after reports up "
                   f"to {frontier - self._shift} were final; rows must arrive in time order")
            raise ValueError(msg)
        return time

    def _frame(self, rep: Reports) -> pd.DataFrame:  # pragma: no cover - overridden
        raise NotImplementedError

    def advance(self, watermark: int) -> pd.DataFrame:
        """Learn that no row at or before ``watermark`` will come: emit the reports due."""
        watermark = int(watermark) + self._shift
        if self._state.frontier is not None and watermark <= self._state.frontier:
            return self.empty_output()
        return self._settle(self._state.advance(watermark))

    def finish(self) -> pd.DataFrame:
        """End of input: emit every remaining report."""
        return self._settle(self._state.advance(END_OF_INPUT))

    def _settle(self, rep: Reports) -> pd.DataFrame:
        """The reports' rows; then keys left idle are forgotten (:meth:`ChainState.idle`)
        once they are a quarter of those held: each forgetting copies the held keys' chains,
        so it is paid for by the keys that went idle since the last one. The bytes never
        hold idle keys (:func:`_pack`), so a stream's state follows its live keys."""
        out = self._frame(rep)
        idle = self._state.idle()
        n_idle = int(idle.sum())
        if n_idle and 4 * n_idle >= len(idle):
            kept = np.flatnonzero(~idle)
            self._state.keep(kept)
            sketches = getattr(self, "_sketches", None)
            if sketches is not None:
                sketches.keep(kept)
        return out

    def next_deadline(self) -> int | None:
        """The smallest watermark at which :meth:`advance` emits a report, if any."""
        deadline = self._state.next_deadline()
        return None if deadline is None else deadline - self._shift


@register()
class MultiGranularAggregator(ChainOperator):
    """Aggregates, decayed aggregates and regression per key over every level of a window.

    Input rows: ``key``, ``time`` (int64 µs) and ``value`` (float); or pre-aggregated cells
    with the :data:`CELL_COLUMNS` (one row per key and finest granule, ``time`` inside it).
    Output: one row per key, level and report (see the module docstring).

    Parameters
    ----------
    window : str or MultiGranularSpec, optional
        ``"RANGES 1 HOUR, 1 MINUTE SLIDES 5 MINUTES, 1 SECOND"``.
    levels : list of (range, slide), optional
        Finest level first, instead of ``window``.
    origin : int
        ``t0`` (µs): windows start on whole slides from it.
    closed : {"left", "right"}
        ``"left"``: the windows of ``window()``, ``[s, s + range)``; ``"right"``: the paper's
        scopes ``(tc - range, tc]``, and rows before ``origin`` belong to no scope and are
        counted in ``before_origin``.
    aggregates : tuple of str
        Among ``count, sum, mean, min, max, variance, stddev``.
    regression : bool
        Add ``slope`` (per second) and ``intercept`` (at ``tc``).
    weights : tuple of float, optional
        One weight per level: add ``decayed_sum``, ``decayed_count``, ``decayed_mean``.
    report : {"periodic", "continuous"}
        When levels report.
    distinct : bool
        Add ``distinct``: the estimated number of distinct values of the input's ``item``
        column in each report's scope (or of the pre-built sketches in ``cell_hll``).
    distinct_precision : int
        ``lgConfigK`` of the HLL sketches, 4..21 (default 12: ~1.6% relative error).

    Examples
    --------
    The paper's Fig. 4 levels ``<4,1>, <8,2>, <16,4>`` (one time unit = 1 µs here):

    >>> agg = MultiGranularAggregator(levels=[(4, 1), (8, 2), (16, 4)], closed="right")
    >>> rows = pd.DataFrame({"key": "a", "time": [1, 2, 3, 9], "value": [1.0, 2.0, 3.0, 4.0]})
    >>> out = pd.concat([agg.process(rows), agg.finish()])
    >>> at_8 = out[out.window_end == 9]  # tc = 8: levels 1 and 2 slide, level 0's scope is empty
    >>> at_8[["level", "window_start", "window_end", "count"]].values.tolist()
    [[1, 1, 9, 3], [2, 0, 9, 3]]

    The same rows in the windows of ``window(time, 8, 2)`` and ``window(time, 16, 4)``:

    >>> agg = MultiGranularAggregator(levels=[(4, 1), (8, 2), (16, 4)])
    >>> out = pd.concat([agg.process(rows), agg.finish()])
    >>> out[out.window_end == 8][["level", "window_start", "window_end", "count"]].values.tolist()
    [[1, 0, 8, 3], [2, -8, 8, 3]]
    """

    FORMAT_TAG = "MGRAGGR"
    FORMAT_VERSION = 2  # 2: distinct counts (their sketches and parameters)
    # rows out of time order are sorted by key and time at once, a key's rows at one time by
    # their values (key_time_order)
    ORDERS_ROWS_ITSELF = True

    def __init__(
        self,
        window: str | MultiGranularSpec | None = None,
        levels: list | None = None,
        origin: int = 0,
        aggregates: tuple[str, ...] | list[str] = DEFAULT_AGGREGATES,
        regression: bool = False,
        weights: tuple[float, ...] | list[float] | None = None,
        report: ReportMode = "periodic",
        distinct: bool = False,
        distinct_precision: int = DEFAULT_PRECISION,
        *,
        closed: str = "left",
        config: AggregatorConfig | None = None,
    ) -> None:
        self.config = config or AggregatorConfig(
            make_spec(window, levels, origin, closed), tuple(aggregates), bool(regression),
            None if weights is None else tuple(weights), report, distinct, distinct_precision)
        full = self.config.regression or bool({"variance", "stddev"} & set(
            self.config.aggregates))
        effective = self.config.effective_spec
        self._shift = effective.shift
        self._state = ChainState(effective.chain(), N_FIELDS if full else BASIC_FIELDS,
                                 self.config.weights, full)
        self._sketches = (DistinctSketches(effective.chain(), self.config.distinct_precision)
                          if self.config.distinct else None)
        self.before_origin = 0

    @property
    def spec(self) -> MultiGranularSpec:
        """The window specification (as given, before continuous reporting)."""
        return self.config.spec

    @property
    def output_schema(self) -> list[tuple[str, str]]:
        """Key, level, range, slide, window bounds, then the configured aggregates."""
        cols = list(REPORT_COLUMNS)
        cols += [(a, "int64" if a == "count" else "float64") for a in self.config.aggregates]
        if self.config.regression:
            cols += [("slope", "float64"), ("intercept", "float64")]
        if self.config.weights is not None:
            cols += [("decayed_sum", "float64"), ("decayed_count", "float64"),
                     ("decayed_mean", "float64")]
        if self.config.distinct:
            cols.append(("distinct", "int64"))
        return cols

    @property
    def input_schema(self) -> list[tuple[str, str]]:
        """The raw rows' ``value`` (a float) and, for distinct counts, their ``item`` (text).

        Examples
        --------
        >>> MultiGranularAggregator(levels=[(4, 1)]).input_schema
        [('value', 'float64'), ('item', 'string')]
        """
        return [(VALUE, "float64"), (ITEM, "string")]

    @property
    def derived_outputs(self) -> dict[str, str]:
        """Those of every multi-granular operator, and ``mean`` where ``count`` and ``sum``
        are outputs (a report's count is at least 1)."""
        derived = super().derived_outputs
        if {"count", "sum", "mean"} <= set(self.config.aggregates):
            derived["mean"] = "CASE WHEN count > 0 THEN sum / count END"
        return derived

    @property
    def n_keys(self) -> int:
        """Number of keys seen so far."""
        return len(self._state.keys)

    # ------------------------------------------------------------------ stream entry points
    def process(self, batch: pd.DataFrame) -> pd.DataFrame:
        """Consume rows (or cells) in time order; return the reports they make final.

        Examples
        --------
        >>> agg = MultiGranularAggregator(levels=[(2, 1)])
        >>> agg.process(pd.DataFrame({"key": "a", "time": [1, 2], "value": [5.0, 7.0]})
        ...             )[["window_end", "count"]].values.tolist()
        [[2, 1]]
        """
        if not len(batch):
            return self.empty_output()
        if self._sketches is not None and ITEM not in batch and CELL_HLL not in batch:
            msg = (f"`distinct` needs an {ITEM!r} column (or {CELL_HLL!r} sketches) in the "
                   f"input; got columns {list(batch.columns)}")
            raise ValueError(msg)
        time = self._chain_times(batch[TIME].to_numpy().astype(np.int64, copy=False))
        keys = batch[KEY] if KEY in batch else np.zeros(len(batch), dtype=np.int64)
        st = self._state
        keep = time >= st.spec.origin
        if not keep.all():
            self.before_origin += int((~keep).sum())
            batch, time = batch[keep], time[keep]
            keys = keys[keep]
            if not len(time):
                return self.empty_output()
        codes, uniques = factorize_keys(keys)
        slot = st.slots(uniques)[codes]
        frontier = int(time.max()) - 1
        # a key's rows at one time by what the fold reads of them: a float sum in another
        # order is another float
        read = ([batch[c] for c in CELL_COLUMNS if c in batch] if CELL_COLUMNS[0] in batch
                else [batch[VALUE]])
        order = key_time_order(slot, time, read)
        if order is not None:
            slot, time = slot[order], time[order]
        if self._sketches is not None:
            self._sketch(batch, slot, st.granules(time), order)
        if CELL_COLUMNS[0] in batch:
            cells = self._cells(batch)
            reports = st.fold_cells(slot, time, cells if order is None else cells[order],
                                    frontier)
        else:
            value = batch[VALUE].to_numpy(np.float64)
            reports = st.fold_rows(slot, time, value if order is None else value[order],
                                   frontier)
        return self._settle(reports)

    def _cells(self, batch: pd.DataFrame) -> np.ndarray:
        """The input cells as an array of every field; fields these reports never read
        may be absent from ``batch`` and are zero."""
        missing = [c for c in self.config.cell_columns if c not in batch]
        if missing:
            msg = (f"pre-aggregated input needs the columns {list(self.config.cell_columns)} "
                   f"for these reports; missing {missing}")
            raise ValueError(msg)
        n_fields = self._state.n_fields
        cells = np.zeros((len(batch), n_fields), dtype=np.float64)
        for i, name in enumerate(CELL_COLUMNS[:n_fields]):
            if name in batch:
                cells[:, i] = batch[name].to_numpy(np.float64)
        return cells

    def _sketch(self, batch: pd.DataFrame, slot: np.ndarray, granule: np.ndarray,
                order: np.ndarray | None) -> None:
        column = CELL_HLL if CELL_HLL in batch else ITEM
        values = batch[column].to_numpy(object)
        values = values if order is None else values[order]
        if column == CELL_HLL:
            self._sketches.add_sketches(slot, granule, values)
        else:
            self._sketches.add_items(slot, granule, values)

    def horizon(self, horizon: int) -> pd.DataFrame:
        """Continuous state reporting: per key, the aggregates over the horizon ending at the
        frontier (the latest instant all rows up to which have arrived), rows not yet final
        excluded.

        The chain is visited bottom-up (queues of level 0 first) and cells are taken while
        they lie wholly in ``(frontier - horizon, frontier]``; a cell straddling the rear bound
        is left out, so the horizon is exact when it is a whole number of the covering
        level's cells (e.g. a level's range at an instant when that level slides).

        Examples
        --------
        >>> agg = MultiGranularAggregator(levels=[(2, 1), (4, 2)], closed="right")
        >>> _ = agg.process(pd.DataFrame({"key": "a", "time": [1, 2, 3, 4, 5],
        ...                               "value": [1.0, 2.0, 3.0, 4.0, 5.0]}))
        >>> agg.horizon(4)[["key", "count", "sum"]].values.tolist()
        [['a', 4, 10.0]]
        """
        st = self._state
        used = len(st.keys)
        if st.frontier is None or not used:
            return self.empty_output()
        b0, origin = st.spec.finest_slide, st.spec.origin
        g_front = (st.frontier - origin) // b0
        rear = st.frontier - horizon  # cells must start after it
        lay = st.layout
        cells = empty_cells(used, st.n_fields)
        for s in range(used):
            for k in range(st.spec.n_levels):
                for q in range(st.size[s, k]):
                    pos = lay.off[k] + (st.head[s, k] + q) % lay.cap[k]
                    end = st.ring_end[s, pos]
                    start_instant = origin + (end - lay.s[k]) * b0
                    if start_instant >= rear and end <= g_front:
                        merge_into(cells[s], st.ring[s, pos], float((end - g_front) * b0))
        has = np.flatnonzero(cells[:, N] > 0)
        reports = Reports(np.column_stack([has, np.full(len(has), -1), np.full(len(has),
                                                                                  g_front)]),
                          cells[has], np.zeros((len(has), 3)))
        distinct = None
        if self._sketches is not None:
            s_rear = -((origin - rear) // b0)  # cells must start at or after this granule
            distinct = self._sketches.horizon(has, g_front, s_rear)
        return self._frame(reports, horizon=horizon, distinct=distinct)

    # ------------------------------------------------------------------ output
    def _frame(self, rep: Reports, horizon: int | None = None,
               distinct: np.ndarray | None = None) -> pd.DataFrame:
        if self._sketches is not None and horizon is None:
            distinct = self._sketches.estimates(rep.slot, rep.level, rep.granule)
            self._drop_idle_sketches()
        if not len(rep):
            return self.empty_output()
        spec = self._state.spec
        ranges = np.array([lv.range for lv in spec.levels], dtype=np.int64)
        slides = np.array([lv.slide for lv in spec.levels], dtype=np.int64)
        if horizon is None:
            rng, sld = ranges[rep.level], slides[rep.level]
        else:
            rng = np.full(len(rep), horizon, dtype=np.int64)
            sld = np.full(len(rep), spec.finest_slide, dtype=np.int64)
        c = rep.cells
        n = c[:, N]
        cols = {
            KEY: self._state.key_values()[rep.slot],
            "level": rep.level.astype(np.int64),
            "range": rng,
            "slide": sld,
        }
        cols["window_start"], cols["window_end"] = self._window_bounds(rep.granule, rng)
        with np.errstate(divide="ignore", invalid="ignore"):
            values = {"count": n.astype(np.int64), "sum": c[:, SUM], "mean": c[:, SUM] / n,
                      "min": c[:, MIN], "max": c[:, MAX]}
            if {"variance", "stddev"} & set(self.config.aggregates):  # full cells only
                values["variance"] = np.where(n > 1, c[:, SVV] / (n - 1), np.nan)
                values["stddev"] = np.sqrt(values["variance"])
            for a in self.config.aggregates:
                cols[a] = values[a]
            if self.config.regression:
                slope_us = np.where(c[:, STT] > 0, c[:, STV] / c[:, STT], np.nan)
                cols["slope"] = slope_us * 1e6
                cols["intercept"] = c[:, MV] - slope_us * c[:, MT]
            if self.config.weights is not None:
                cols["decayed_sum"] = rep.extras[:, 0]
                cols["decayed_count"] = rep.extras[:, 1]
                cols["decayed_mean"] = rep.extras[:, 0] / rep.extras[:, 1]
        if distinct is not None:
            cols["distinct"] = distinct
        # copy=False: every column is a fresh array, and pandas would otherwise stack those
        # of one dtype into a block (a copy of the whole output)
        return pd.DataFrame(cols, copy=False)

    def _drop_idle_sketches(self) -> None:
        """Sketches of keys whose chain holds nothing (no cell, no open cell) are stale."""
        live = self._sketches.live_slots()
        if len(live):
            st = self._state
            idle = (st.size[live].sum(axis=1) == 0) & (st.open_g[live] == NONE)
            self._sketches.drop(live[idle])

    # ------------------------------------------------------------------ serialization
    def to_bytes(self) -> bytes:
        """Serialize parameters and state (only the cells the chains hold).

        Examples
        --------
        >>> agg = MultiGranularAggregator(levels=[(4, 1), (8, 2)], aggregates=["sum"])
        >>> _ = agg.process(pd.DataFrame({"key": ["a", "b"], "time": [1, 2],
        ...                               "value": [1.0, 2.0]}))
        >>> again = MultiGranularAggregator.from_bytes(agg.to_bytes())
        >>> again.config == agg.config, again.n_keys
        (True, 2)
        """
        return _pack(self, self.config_meta())

    def config_meta(self) -> dict:
        """The configuration as JSON-ready values."""
        cfg = self.config
        return {
            "levels": [[lv.range, lv.slide] for lv in cfg.spec.levels],
            "origin": cfg.spec.origin, "closed": cfg.spec.closed,
            "aggregates": list(cfg.aggregates),
            "regression": cfg.regression,
            "weights": None if cfg.weights is None else list(cfg.weights),
            "report": cfg.report, "distinct": cfg.distinct,
            "distinct_precision": cfg.distinct_precision,
        }

    @classmethod
    def from_bytes(cls, blob: bytes) -> MultiGranularAggregator:
        """Rebuild from :meth:`to_bytes` output; corrupt bytes raise StateFormatError.

        Examples
        --------
        >>> MultiGranularAggregator.from_bytes(b"junk")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        windowkit.core.serialization.StateFormatError: ...state bytes are too short ...
        """
        def build(meta: dict) -> MultiGranularAggregator:
            # state written before windows could be closed on the left had the paper's scopes
            spec = MultiGranularSpec.from_levels([tuple(p) for p in meta["levels"]],
                                                 meta["origin"], meta.get("closed", "right"))
            weights = meta["weights"]
            return cls(config=AggregatorConfig(
                spec, tuple(meta["aggregates"]), bool(meta["regression"]),
                None if weights is None else tuple(weights), meta["report"],
                meta["distinct"], meta["distinct_precision"]))
        return _unpack(cls, blob, build)


def _pack(op: ChainOperator, meta: dict) -> bytes:
    """The operator's bytes: ``meta``, and the chains (and sketches) of its keys that are
    not idle."""
    st = op._state
    meta = dict(meta, frontier=st.frontier, before_origin=op.before_origin)
    kept = np.flatnonzero(~st.idle())
    keys = [st.keys[s] for s in kept.tolist()]
    sketches = getattr(op, "_sketches", None)
    arrays = {} if sketches is None else sketches.arrays(kept)
    arrays.update(st.arrays(kept))
    if keys and isinstance(keys[0], tuple):  # (key, item) pairs
        meta["key_kind"] = "pairs"
        arrays["keys"] = np.asarray([k for k, _ in keys], dtype=object)
        arrays["items"] = np.asarray([i for _, i in keys], dtype=object)
    else:
        integer = bool(keys) and all(isinstance(k, (int, np.integer)) for k in keys)
        meta["key_kind"] = "int" if integer else "object"
        arrays["keys"] = (np.asarray(keys, dtype=np.int64) if integer
                          else np.asarray(keys, dtype=object))
    return pack_state(op.FORMAT_TAG, op.FORMAT_VERSION, meta, arrays)


def _unpack(cls: type, blob: bytes, build) -> StreamOperator:
    meta, arrays = unpack_state(blob, cls.FORMAT_TAG, cls.FORMAT_VERSION)
    try:
        op = build(meta)
        if meta["key_kind"] == "pairs":
            keys = list(zip(arrays["keys"].tolist(), arrays["items"].tolist(), strict=True))
        else:
            keys = arrays["keys"].tolist()
        frontier = meta["frontier"]
        op._state.load(keys, arrays, None if frontier is None else int(frontier))
        sketches = getattr(op, "_sketches", None)
        if sketches is not None:
            sketches.load(arrays, len(keys))
        op.before_origin = int(meta["before_origin"])
        return op
    except StateFormatError as exc:
        msg = f"{cls.__name__} state: {exc}"
        raise StateFormatError(msg) from exc
    except (KeyError, ValueError, TypeError, IndexError, AttributeError) as exc:
        msg = f"{cls.__name__} state is corrupt: {exc!r}"
        raise StateFormatError(msg) from exc


