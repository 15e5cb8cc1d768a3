"""Threshold frames: maximal periods where a predicate holds (NiagaraST's frame operator).

Semantics (our reading of Grossniklaus et al., sections 4.3-4.4 and appendices B, C, F; the
brute-force oracle ``windowkit.reference.frames`` is written from the same text):

* Each key's stream is processed in time order. A row's predicate value is 1 (holds),
  0 (does not hold) or -1 (missing: null, or not evaluable).
* With a reporting ``schedule`` of period P, a gap g between consecutive rows of a key holds
  ``round(g / P) - 1`` absent reports (halves round up), at times ``a + P, a + 2P, ...``; they
  are missing values. When the input ends, the report due ``P`` after a key's last row is absent.
* A 0 always separates frames. With ``missing="unsatisfied"`` a missing value separates too;
  with ``missing="satisfying"`` missing values *between* satisfying ones are bridged. Either
  way a frame starts and ends on a known satisfying value (the paper: "a frame cannot begin
  with a missing value"; its proposed refinement bridges only missing values "in the midst of
  other high-loss records").
* A frame is the half-open interval ``[start, end)``: ``start`` and ``last`` are the times of its
  first and last satisfying rows (Appendix B's ``(fs, fe)``), ``end`` is the time of the next
  row or absent report after ``last``. At the end of a bounded input with no such element,
  ``end = last + P`` with a schedule and ``last + 1`` (one microsecond) without.
* ``min_duration`` holds when ``n_tuples >= D`` (rows; bridged missing values count) or
  ``last - start >= D`` (time; point events). Shorter frames are never reported.
* A frame is *certain* at the first satisfying row where it reaches ``min_duration``: it gets its
  ``frame_id`` (0, 1, 2... per key) and, with ``fragment_every``, a ``partial`` row; then another
  partial at the first satisfying row past each further multiple of ``fragment_every``, and one
  ``final`` row when it closes. Since every row is placed by the data alone, the output does not
  depend on how the stream is cut into batches.
* A frame closes on the first separator after ``last`` (with missing values bridged, on the
  first 0), or, with ``missing="unsatisfied"`` and a schedule, when the watermark shows the next
  report is absent: no row can arrive before ``last + ceil(1.5 P)`` (see :meth:`advance`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from windowkit.core.durations import Duration, to_micros
from windowkit.core.key_index import KeyIndex
from windowkit.core.operator import KEY, TIME, StreamOperator
from windowkit.core.ordering import factorize_keys, group_rows_by_slot, sort_each_key_by_time
from windowkit.core.registry import register
from windowkit.core.serialization import pack_state, state_decoder, unpack_state
from windowkit.core.validation import check_choice

MissingPolicy = Literal["unsatisfied", "satisfying"]
"""How a missing value counts: ``"unsatisfied"`` breaks a frame, ``"satisfying"`` bridges."""

DuplicatePolicy = Literal["keep", "any", "all"]
"""Rows of one key at the same time: ``"keep"`` them all as reports (in the fixed order
unsatisfied, missing, satisfying), or make them one report that holds if ``"any"`` or ``"all"``
of them hold (missing if none decides)."""
DUPLICATE_POLICIES = ("keep", "any", "all")
# Order of tied rows under "keep" (and which one "any"/"all" keep): by code -1, 0, 1 -> rank.
_TIE_RANK = np.array([1, 0, 2], dtype=np.int8)

VALUE = "value"
_NONE = np.iinfo(np.int64).min

OUTPUT_SCHEMA = [
    (KEY, "string"),
    ("frame_id", "int64"),
    ("start", "timestamp"),
    ("end", "timestamp"),
    ("last", "timestamp"),
    ("n_tuples", "int64"),
    ("n_missing", "int64"),
    ("status", "string"),
]


@dataclass(frozen=True)
class ThresholdFrameSpec:
    """Validated parameters of a :class:`ThresholdFramer`.

    Parameters
    ----------
    min_duration : Duration
        Shortest reported frame, in rows or in time.
    missing : {"unsatisfied", "satisfying"}
        Whether missing values break frames or are bridged between satisfying ones.
    schedule : int or None
        Reporting period in microseconds; absent reports become missing values.
    fragment_every : Duration or None
        Emit partial fragments of open frames this often (rows or time); None for none.
    duplicates : {"keep", "any", "all"}
        Rows of one key at one time (the paper assumes unique times per key): all are
        reports, ordered unsatisfied, missing, satisfying whatever their arrival order
        (``"keep"``), or one report holding if any / all of them hold.

    Examples
    --------
    >>> ThresholdFrameSpec.create("3 rows", schedule="30 seconds").schedule
    30000000
    """

    min_duration: Duration
    missing: MissingPolicy = "unsatisfied"
    schedule: int | None = None
    fragment_every: Duration | None = None
    duplicates: DuplicatePolicy = "keep"

    def __post_init__(self) -> None:
        check_choice("missing", self.missing, ("unsatisfied", "satisfying"))
        check_choice("duplicates", self.duplicates, DUPLICATE_POLICIES)
        check_schedule(self.schedule)

    @classmethod
    def create(
        cls,
        min_duration: str | int | Duration = "1 rows",
        missing: MissingPolicy = "unsatisfied",
        schedule: str | int | None = None,
        fragment_every: str | int | Duration | None = None,
        duplicates: DuplicatePolicy = "keep",
    ) -> ThresholdFrameSpec:
        """Parse user-facing values (``"3 rows"``, ``"90 seconds"``, timedeltas).

        Examples
        --------
        >>> ThresholdFrameSpec.create("90 seconds").min_duration
        Duration(kind='time', amount=90000000)
        >>> ThresholdFrameSpec.create("3 rows", missing="sometimes")
        Traceback (most recent call last):
        ...
        ValueError: `missing` must be one of 'unsatisfied', 'satisfying'; got 'sometimes'
        """
        return cls(missing=missing, duplicates=duplicates,
                   **parse_frame_lengths(min_duration, schedule, fragment_every))


def parse_frame_lengths(
    min_duration: str | int | Duration,
    schedule: str | int | None,
    fragment_every: str | int | Duration | None,
) -> dict[str, Duration | int | None]:
    """The lengths every framing's spec takes, parsed from user-facing values.

    Examples
    --------
    >>> parse_frame_lengths("3 rows", "30 seconds", None)["schedule"]
    30000000
    """
    return {
        "min_duration": Duration.parse(min_duration, "min_duration"),
        "schedule": None if schedule is None else to_micros(schedule, "schedule"),
        "fragment_every": (None if fragment_every is None
                           else Duration.parse(fragment_every, "fragment_every")),
    }


def check_schedule(schedule: int | None) -> None:
    """``ValueError`` unless ``schedule`` (µs) is None or positive.

    Examples
    --------
    >>> check_schedule(0)
    Traceback (most recent call last):
    ...
    ValueError: `schedule` must be a positive period like '30 seconds'; got 0
    """
    if schedule is not None and schedule <= 0:
        msg = f"`schedule` must be a positive period like '30 seconds'; got {schedule!r}"
        raise ValueError(msg)


def predicate_codes(values: np.ndarray | pd.Series | list) -> np.ndarray:
    """Encode predicate values as int8: 1 holds, 0 does not, -1 missing (None/NaN/NA).

    Examples
    --------
    >>> predicate_codes([True, False, None]).tolist()
    [1, 0, -1]
    >>> predicate_codes(np.array([1, 0, -1], dtype=np.int8)).tolist()
    [1, 0, -1]
    """
    if isinstance(values, pd.Series):
        series = values
    else:
        arr = np.asarray(values)
        if arr.dtype == np.int8:
            return arr
        series = pd.Series(arr)
    if series.dtype == np.int8:
        return series.to_numpy()
    missing = series.isna().to_numpy()
    if series.dtype.kind in "iu":
        codes = np.where(series.to_numpy() < 0, -1, series.to_numpy() != 0)
    else:
        truth = series.where(~missing, False).astype(bool).to_numpy()
        codes = truth.astype(np.int8)
    codes = np.asarray(codes, dtype=np.int8)
    codes[missing] = -1
    return codes


def _keys_array(index: KeyIndex) -> np.ndarray:
    """Keys as int64 if every one is an integer (as :meth:`ThresholdFramer.to_bytes` stores
    them), else as objects."""
    keys = index.array()
    if len(keys) and all(isinstance(k, (int, np.integer)) for k in keys):
        return keys.astype(np.int64)
    return keys


class _KeyState:
    """Per-key state as parallel numpy arrays indexed by a slot number."""

    FIELDS = {
        "last_time": np.int64,  # time of the key's last row (_NONE before any)
        "open": np.bool_,  # a frame is open (its last element is a satisfying row)
        "f_start": np.int64,
        "f_last": np.int64,
        "f_n": np.int64,  # elements from start through last
        "f_ones": np.int64,  # satisfying rows from start through last
        "pend_n": np.int64,  # bridged missing elements after last (missing="satisfying")
        "pend_end": np.int64,  # time of the first element after last, or _NONE
        "frame_id": np.int64,  # id of the open frame once certain, else -1
        "anchor": np.int64,  # fragment measure at the anchor (rows or time)
        "k_done": np.int64,  # fragments emitted after the anchor
        "next_id": np.int64,  # next frame id of the key
    }

    def __init__(self, keys: np.ndarray | list = ()) -> None:
        self.index = KeyIndex(keys)
        self.arrays = {name: np.zeros(0, dtype=dtype) for name, dtype in self.FIELDS.items()}

    @property
    def keys(self) -> list:
        return self.index.keys

    def slots(self, unique_keys: np.ndarray) -> np.ndarray:
        held = len(self.index)
        slots = self.index.slots(unique_keys)
        grow = len(self.index) - held
        if grow:
            for name, arr in self.arrays.items():
                fill = _NONE if name in ("last_time", "pend_end") else 0
                fill = -1 if name == "frame_id" else fill
                self.arrays[name] = np.concatenate([arr, np.full(grow, fill, dtype=arr.dtype)])
        return slots

    def __getattr__(self, name: str) -> np.ndarray:
        try:
            return self.__dict__["arrays"][name]
        except KeyError as exc:
            raise AttributeError(name) from exc


@register()
class ThresholdFramer(StreamOperator):
    """Incremental framing function (Definition 5) for threshold frames over many keys.

    See the module docstring for the exact semantics. Vectorized: a batch is processed with
    numpy run detection over all keys at once; per-key state is a handful of integers.

    Parameters
    ----------
    min_duration : str, int or Duration
        ``"3 rows"`` or ``"90 seconds"``; an int means rows.
    missing : {"unsatisfied", "satisfying"}
        Missing values break frames (default) or are bridged between satisfying values.
    schedule : str, int or None
        Reporting period (``"30 seconds"``, or microseconds); absent reports are missing.
    fragment_every : str, int, Duration or None
        Emit ``partial`` rows for open frames this often.

    Examples
    --------
    Appendix B, F1: maximal periods with Temperature > 32.

    >>> temps = [30, 31, 33, 34, 30, 34, 33, 34, 35, 32]
    >>> framer = ThresholdFramer(min_duration="1 rows")
    >>> out = framer.update(np.arange(1, 11), np.array(temps) > 32, key=np.zeros(10, int))
    >>> out[["start", "last", "end"]].values.tolist()
    [[3, 4, 5], [6, 9, 10]]
    """

    FORMAT_TAG = "THRFRAME"
    FORMAT_VERSION = 1
    ORDERS_ROWS_ITSELF = True
    # every per-key field lives in _KeyState; the spec is the only thing the keys share
    KEY_PARTITIONED = True

    def __init__(
        self,
        min_duration: str | int | Duration = "1 rows",
        missing: MissingPolicy = "unsatisfied",
        schedule: str | int | None = None,
        fragment_every: str | int | Duration | None = None,
        duplicates: DuplicatePolicy = "keep",
        *,
        spec: ThresholdFrameSpec | None = None,
    ) -> None:
        self.spec = spec or ThresholdFrameSpec.create(min_duration, missing, schedule,
                                                      fragment_every, duplicates)
        self._state = _KeyState()

    @property
    def output_schema(self) -> list[tuple[str, str]]:
        """Output columns: key, frame_id, start, end, last, n_tuples, n_missing, status."""
        return OUTPUT_SCHEMA

    @property
    def n_keys(self) -> int:
        """Number of keys seen so far."""
        return len(self._state.keys)

    @property
    def open_frames(self) -> int:
        """Number of keys with an open frame."""
        return int(self._state.open.sum())

    # ------------------------------------------------------------------ public entry points
    def process(self, batch: pd.DataFrame) -> pd.DataFrame:
        """Consume a batch with columns ``key``, ``time`` (int64 µs) and ``value``.

        Examples
        --------
        >>> f = ThresholdFramer("2 rows")
        >>> f.process(pd.DataFrame({"key": ["a"] * 3, "time": [1, 2, 3], "value": [1, 1, 0]}))
        ... # doctest: +NORMALIZE_WHITESPACE
          key  frame_id  start  end  last  n_tuples  n_missing status
        0   a         0      1    3     2         2          0  final
        """
        keys = batch[KEY] if KEY in batch else None  # a Series: categorical keys keep codes
        return self.update(batch[TIME].to_numpy(), batch[VALUE], key=keys)

    def update(
        self,
        time: np.ndarray,
        value: np.ndarray | pd.Series,
        key: np.ndarray | None = None,
    ) -> pd.DataFrame:
        """Consume one batch: event times (int64 µs), predicate values and keys.

        Within the batch, rows may come in any order: each key's rows are ordered by time
        (stably, so ties keep their order in the batch). Across batches a key's time must not go
        backwards.

        Parameters
        ----------
        time : numpy.ndarray of int64
            Event times.
        value : array-like
            Booleans (None/NaN for missing) or int8 codes 1/0/-1.
        key : array-like, optional
            Grouping keys (a ``pandas.Categorical`` or category Series is used without
            re-hashing); all rows belong to one key if omitted.

        Returns
        -------
        pandas.DataFrame
            New output rows (partial fragments and final frames).

        Examples
        --------
        >>> f = ThresholdFramer("1 rows")
        >>> f.update(np.array([1, 2]), [True, True]).empty
        True
        >>> f.update(np.array([3]), [False])[["start", "end"]].values.tolist()
        [[1, 3]]
        """
        time = np.asarray(time, dtype=np.int64)
        codes = predicate_codes(value)
        if key is None:
            key = np.zeros(len(time), dtype=np.int64)
        if not (len(time) == len(codes) == len(key)):
            msg = f"`time`, `value` and `key` must have equal lengths; got {len(time)}, " \
                  f"{len(codes)}, {len(key)}"
            raise ValueError(msg)
        if len(time) == 0:
            return self.empty_output()
        codes_k, uniques = factorize_keys(key)
        slot = self._state.slots(uniques)[codes_k]
        slot, time, codes = _sort_by_key_and_time(slot, time, codes, self.n_keys)
        slot, time, codes = settle_ties(slot, time, codes, self.spec.duplicates)
        return _Batch(self, slot, time, codes).run()

    def advance(self, watermark: int) -> pd.DataFrame:
        """Close frames whose next scheduled report is known absent by ``watermark``.

        Only with a schedule and ``missing="unsatisfied"``: a row arriving after the watermark
        has a gap of at least ``ceil(1.5 P)`` to ``last``, so the report due at ``last + P`` is
        absent and the frame ends there.

        Examples
        --------
        >>> f = ThresholdFramer("1 rows", schedule=10)
        >>> _ = f.update(np.array([0, 10]), [True, True])
        >>> f.advance(23).empty, f.advance(24)[["start", "end"]].values.tolist()
        (True, [[0, 20]])
        """
        deadline = self._deadlines()
        if deadline is None:
            return self.empty_output()
        close = self._state.open & (deadline <= watermark)
        slots = np.flatnonzero(close)
        return self._close_carried(slots, self._state.f_last[slots] + self.spec.schedule)

    def finish(self) -> pd.DataFrame:
        """End of a bounded input: close every open frame.

        Examples
        --------
        >>> f = ThresholdFramer("1 rows")
        >>> _ = f.update(np.array([5, 6]), [True, True])
        >>> f.finish()[["start", "last", "end"]].values.tolist()
        [[5, 6, 7]]
        """
        st = self._state
        slots = np.flatnonzero(st.open)
        tail = st.f_last[slots] + (self.spec.schedule or 1)
        end = np.where(st.pend_end[slots] != _NONE, st.pend_end[slots], tail)
        return self._close_carried(slots, end)

    def next_deadline(self) -> int | None:
        """The smallest watermark at which :meth:`advance` closes a frame, if any.

        Examples
        --------
        >>> f = ThresholdFramer("1 rows", schedule=10)
        >>> _ = f.update(np.array([0]), [True])
        >>> f.next_deadline()
        14
        """
        deadline = self._deadlines()
        if deadline is None or not self._state.open.any():
            return None
        return int(deadline[self._state.open].min())

    # ------------------------------------------------------------------ per-key parts
    def key_state(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The keys held, in slot order, and their state arrays.

        Examples
        --------
        >>> f = ThresholdFramer("1 rows")
        >>> _ = f.update(np.array([1, 2]), [True, False], key=np.array(["b", "a"]))
        >>> keys, arrays = f.key_state()
        >>> keys.tolist(), arrays["open"].tolist()
        (['b', 'a'], [True, False])
        """
        return _keys_array(self._state.index), dict(self._state.arrays)

    def load_key_state(self, keys: np.ndarray, arrays: dict[str, np.ndarray]) -> None:
        """Hold exactly ``keys`` with the state ``arrays`` (of :meth:`key_state`).

        Examples
        --------
        >>> f = ThresholdFramer("1 rows")
        >>> _ = f.update(np.array([1]), [True], key=np.array(["a"]))
        >>> g = ThresholdFramer("1 rows")
        >>> g.load_key_state(*f.key_state())
        >>> g.finish()[["key", "start"]].values.tolist()
        [['a', 1]]
        """
        if set(arrays) != set(_KeyState.FIELDS) or any(len(a) != len(keys)
                                                       for a in arrays.values()):
            msg = "ThresholdFramer key state: wrong fields or lengths"
            raise ValueError(msg)
        state = _KeyState(keys)
        state.arrays = {name: np.asarray(arrays[name], dtype=dtype)
                        for name, dtype in _KeyState.FIELDS.items()}
        self._state = state

    def key_deadlines(self, arrays: dict[str, np.ndarray] | None = None) -> np.ndarray | None:
        """Each key's smallest watermark at which :meth:`advance` closes its frame.

        Examples
        --------
        >>> f = ThresholdFramer("1 rows", schedule=10)
        >>> _ = f.update(np.array([0, 0]), [True, False], key=np.array(["a", "b"]))
        >>> f.key_deadlines().tolist() == [14, np.iinfo(np.int64).max]
        True
        """
        deadline = self._deadlines()
        if deadline is None:
            return None
        return np.where(self._state.open, deadline, np.iinfo(np.int64).max)

    def _deadlines(self) -> np.ndarray | None:
        if self.spec.schedule is None or self.spec.missing != "unsatisfied":
            return None
        period = self.spec.schedule
        return self._state.f_last + (3 * period + 1) // 2 - 1

    def _close_carried(self, slots: np.ndarray, end: np.ndarray) -> pd.DataFrame:
        st = self._state
        certain = st.frame_id[slots] >= 0
        s = slots[certain]
        out = _frame_rows(
            self, s, st.frame_id[s], st.f_start[s], end[certain], st.f_last[s], st.f_n[s],
            st.f_n[s] - st.f_ones[s], final=True,
        )
        _reset_open(st, slots)
        return out

    # ------------------------------------------------------------------ serialization
    def to_bytes(self) -> bytes:
        """Serialize parameters and per-key state.

        Examples
        --------
        >>> f = ThresholdFramer("3 rows", schedule="30 seconds")
        >>> _ = f.update(np.array([0, 30_000_000]), [True, True], key=np.array(["r1", "r1"]))
        >>> g = ThresholdFramer.from_bytes(f.to_bytes())
        >>> g.spec == f.spec, g.n_keys, g.open_frames
        (True, 1, 1)
        """
        spec = self.spec
        meta = {
            "min_duration": [spec.min_duration.kind, spec.min_duration.amount],
            "missing": spec.missing,
            "schedule": spec.schedule,
            "fragment_every": (
                None if spec.fragment_every is None
                else [spec.fragment_every.kind, spec.fragment_every.amount]
            ),
            "duplicates": spec.duplicates,
        }
        keys = _keys_array(self._state.index)
        meta["integer_keys"] = bool(keys.dtype == np.int64 or not len(keys))
        arrays = dict(self._state.arrays)
        arrays["keys"] = keys
        return pack_state(self.FORMAT_TAG, self.FORMAT_VERSION, meta, arrays)

    @classmethod
    @state_decoder
    def from_bytes(cls, blob: bytes) -> ThresholdFramer:
        """Rebuild a framer from :meth:`to_bytes` output (checked header; clear errors).

        Examples
        --------
        >>> ThresholdFramer.from_bytes(b"WKIT" + bytes(30))
        Traceback (most recent call last):
        ...
        windowkit.core.serialization.StateFormatError: ThresholdFramer state: unsupported \
windowkit container version 0
        """
        meta, arrays = unpack_state(blob, cls.FORMAT_TAG, cls.FORMAT_VERSION)
        frag = meta["fragment_every"]
        spec = ThresholdFrameSpec(
            min_duration=Duration(*meta["min_duration"]),
            missing=meta["missing"],
            schedule=meta["schedule"],
            fragment_every=None if frag is None else Duration(*frag),
            duplicates=meta.get("duplicates", "keep"),  # older state: the rows all counted
        )
        framer = cls(spec=spec)
        st = framer._state = _KeyState(arrays.pop("keys"))
        for name, dtype in _KeyState.FIELDS.items():
            st.arrays[name] = arrays[name].astype(dtype, copy=False)
        return framer


def _sort_by_key_and_time(
    slot: np.ndarray, time: np.ndarray, codes: np.ndarray, n_slots: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows sorted by (slot, time), stably.

    Rows usually come in time order within each key, so grouping by slot mostly suffices and
    only the keys whose rows are out of order are then sorted by time.
    """
    if len(slot) < 2:
        return slot, time, codes
    if np.any(slot[1:] < slot[:-1]):
        slot, time, codes = group_rows_by_slot(slot, n_slots, time, codes)
    if np.any((time[1:] < time[:-1]) & (slot[1:] == slot[:-1])):
        slot, time, codes = sort_each_key_by_time(slot, time, codes)
    return slot, time, codes

def settle_ties(
    slot: np.ndarray, time: np.ndarray, codes: np.ndarray, policy: DuplicatePolicy = "keep"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows sorted by (key, time): tied rows in a fixed order, or one row per tie (``policy``).

    Ties of one key at one time are released to the framer together (the runner holds rows
    until the watermark passes them), so ordering them here makes the output independent of
    arrival order, file order and partitioning. Only the tied rows are touched.

    Examples
    --------
    >>> s, t, c = np.zeros(4, np.int64), np.array([1, 1, 1, 2]), np.array([1, 0, -1, 1], np.int8)
    >>> settle_ties(s, t, c)[2].tolist(), settle_ties(s, t, c, "any")[2].tolist()
    ([0, -1, 1, 1], [1, 1])
    >>> settle_ties(s, t, c, "all")[1].tolist(), settle_ties(s, t, c, "all")[2].tolist()
    ([1, 2], [0, 1])
    """
    if len(time) < 2:
        return slot, time, codes
    tied = (time[1:] == time[:-1]) & (slot[1:] == slot[:-1])
    if not tied.any():
        return slot, time, codes
    in_tie = np.zeros(len(time), dtype=bool)
    in_tie[1:] |= tied
    in_tie[:-1] |= tied
    rows = np.flatnonzero(in_tie)
    tie_id = np.cumsum(~np.concatenate([[False], tied])[rows])
    order = rows[np.lexsort((_TIE_RANK[codes[rows] + 1], tie_id))]
    codes = codes.copy()
    codes[rows] = codes[order]
    if policy == "keep":
        return slot, time, codes
    # "any" keeps each tie's highest-ranked row (its last), "all" its lowest (its first)
    keep = np.ones(len(time), dtype=bool)
    if policy == "any":
        keep[:-1] &= ~tied
    else:
        keep[1:] &= ~tied
    return slot[keep], time[keep], codes[keep]


def _reset_open(st: _KeyState, slots: np.ndarray) -> None:
    st.open[slots] = False
    st.frame_id[slots] = -1
    st.pend_n[slots] = 0
    st.pend_end[slots] = _NONE
    st.k_done[slots] = 0


def _frame_rows(
    framer: ThresholdFramer,
    slots: np.ndarray,
    frame_id: np.ndarray,
    start: np.ndarray,
    end: np.ndarray | None,
    last: np.ndarray,
    n_tuples: np.ndarray,
    n_missing: np.ndarray,
    *,
    final: bool,
) -> pd.DataFrame:
    if len(slots) == 0:
        return framer.empty_output()
    keys = framer._state.index.array()[slots]
    end_col = pd.array(end, dtype="Int64") if final else pd.array([None] * len(slots),
                                                                  dtype="Int64")
    return pd.DataFrame({
        KEY: keys,
        "frame_id": frame_id.astype(np.int64),
        "start": start.astype(np.int64),
        "end": end_col,
        "last": last.astype(np.int64),
        "n_tuples": n_tuples.astype(np.int64),
        "n_missing": n_missing.astype(np.int64),
        "status": "final" if final else "partial",
    })


class _Batch:
    """One batch's vectorized pass; rows are sorted by (slot, time)."""

    def __init__(self, framer: ThresholdFramer, slot: np.ndarray, time: np.ndarray,
                 codes: np.ndarray) -> None:
        self.f = framer
        self.st = framer._state
        self.spec = framer.spec
        self.slot, self.time, self.codes = slot, time, codes
        self.n = len(slot)

    def run(self) -> pd.DataFrame:
        st, spec, slot, time, codes = self.st, self.spec, self.slot, self.time, self.codes
        n = self.n
        key_start = np.ones(n, dtype=bool)
        key_start[1:] = slot[1:] != slot[:-1]
        key_end = np.ones(n, dtype=bool)
        key_end[:-1] = key_start[1:]
        prev_time = np.empty(n, dtype=np.int64)
        prev_time[1:] = time[:-1]
        prev_time[key_start] = st.last_time[slot[key_start]]
        has_prev = prev_time != _NONE
        if np.any(has_prev & (time < prev_time)):
            bad = np.flatnonzero(has_prev & (time < prev_time))[0]
            msg = (f"`time` went backwards for key {st.keys[slot[bad]]!r}: {time[bad]} after "
                   f"{prev_time[bad]}; rows of a key must arrive in time order")
            raise ValueError(msg)
        if spec.schedule is not None:
            gap = np.where(has_prev, time - prev_time, 0)
            pre_m = np.maximum(0, (2 * gap + spec.schedule) // (2 * spec.schedule) - 1)
            self._w_cum = np.cumsum(1 + pre_m)  # elements through each row (running sum)
        else:
            pre_m = np.zeros(n, dtype=np.int64)
            self._w_cum = None  # one element per row: the running count is the index + 1
        self.pre_m = pre_m
        is1 = codes == 1
        self.zero_cum = np.cumsum(codes == 0) if spec.missing == "satisfying" else None
        self.key_start, self.key_end = key_start, key_end
        self.first_row = np.flatnonzero(key_start)  # first row position of each key run
        outputs = []
        ones = np.flatnonzero(is1)
        groups = self._group_ones(ones)
        outputs.append(self._carried_without_ones(ones, groups))
        if len(ones):
            outputs.append(self._process_groups(ones, groups))
        st.last_time[slot[key_end]] = time[key_end]
        outputs = [o for o in outputs if len(o)]
        if not outputs:
            return self.f.empty_output()
        return pd.concat(outputs, ignore_index=True) if len(outputs) > 1 else outputs[0]

    def w_cum(self, rows: np.ndarray) -> np.ndarray:
        """Elements (rows and absent reports) from the batch start through each row."""
        return rows + 1 if self._w_cum is None else self._w_cum[rows]

    def run_of(self, rows: np.ndarray) -> np.ndarray:
        """Index of the key run each row belongs to."""
        return np.searchsorted(self.first_row, rows, side="right") - 1

    # -- grouping --------------------------------------------------------------------------
    def _group_ones(self, ones: np.ndarray) -> dict:
        """Split satisfying rows into frames; mark the groups that continue a carried frame."""
        st, slot = self.st, self.slot
        if len(ones) == 0:
            return {"starts": ones, "merged": np.zeros(0, bool)}
        same_key_prev = np.zeros(len(ones), dtype=bool)
        same_key_prev[1:] = slot[ones[1:]] == slot[ones[:-1]]
        if self.spec.missing == "unsatisfied":
            contiguous = np.zeros(len(ones), dtype=bool)
            contiguous[1:] = (ones[1:] == ones[:-1] + 1) & (self.pre_m[ones[1:]] == 0)
            joins_prev = same_key_prev & contiguous
            first_in_key = ~same_key_prev
            joins_carry = first_in_key & st.open[slot[ones]] & self.key_start[ones] & (
                self.pre_m[ones] == 0)
        else:
            zc = self.zero_cum
            no_zero_between = np.zeros(len(ones), dtype=bool)
            no_zero_between[1:] = zc[ones[1:]] == zc[ones[:-1]]
            joins_prev = same_key_prev & no_zero_between
            first_in_key = ~same_key_prev
            run_first = self.first_row[self.run_of(ones)]
            zeros_before = zc[ones] - zc[run_first] + (self.codes[run_first] == 0)
            joins_carry = first_in_key & st.open[slot[ones]] & (zeros_before == 0)
        new_group = ~joins_prev
        starts = np.flatnonzero(new_group)
        return {"starts": starts, "merged": joins_carry[starts]}

    # -- carried frames that meet no satisfying row in this batch --------------------------
    def _carried_without_ones(self, ones: np.ndarray, groups: dict) -> pd.DataFrame:
        st, slot, spec = self.st, self.slot, self.spec
        run_slots = slot[self.first_row]
        carried = st.open[run_slots]
        if len(ones) and groups["merged"].any():
            merged_slots = slot[ones[groups["starts"][groups["merged"]]]]
            carried &= ~np.isin(run_slots, merged_slots)
        runs = np.flatnonzero(carried)
        if len(runs) == 0:
            return self.f.empty_output()
        first = self.first_row[runs]
        s = run_slots[runs]
        after_last = np.where(self.pre_m[first] > 0, st.f_last[s] + (spec.schedule or 0),
                              self.time[first])
        end = np.where(st.pend_end[s] != _NONE, st.pend_end[s], after_last)
        if spec.missing == "unsatisfied":
            close = np.ones(len(runs), dtype=bool)
        else:
            last_row = np.append(self.first_row[1:], self.n)[runs] - 1
            zeros = self.zero_cum[last_row] - self.zero_cum[first] + (self.codes[first] == 0)
            close = zeros > 0
            stay = ~close
            ss = s[stay]
            st.pend_end[ss] = end[stay]
            elems = self.w_cum(last_row[stay]) - self.w_cum(first[stay]) + 1 + self.pre_m[
                first[stay]]
            st.pend_n[ss] += elems
        return self.f._close_carried(s[close], end[close])

    # -- frames with satisfying rows in this batch -----------------------------------------
    def _process_groups(self, ones: np.ndarray, groups: dict) -> pd.DataFrame:
        st, spec, slot, time = self.st, self.spec, self.slot, self.time
        starts, merged = groups["starts"], groups["merged"]
        n_groups = len(starts)
        ends = np.append(starts[1:], len(ones)) - 1  # index into `ones` of each group's last
        a_row, b_row = ones[starts], ones[ends]
        g_slot = slot[a_row]
        # n_through(j) = base_n + w_cum[j] - base_w ; ones_through(j) = base_o + rank(j)
        base_n = np.ones(n_groups, dtype=np.int64)
        base_w = self.w_cum(a_row)
        base_o = np.zeros(n_groups, dtype=np.int64)  # ones before the group's first batch row
        g_start = time[a_row].copy()
        m = np.flatnonzero(merged)
        if len(m):
            ms = g_slot[m]
            first = self.first_row[self.run_of(a_row[m])]
            # elements after the carried last: pending + rows from the key's first row
            base_w[m] = self.w_cum(first) - (1 + self.pre_m[first])
            base_n[m] = st.f_n[ms] + st.pend_n[ms]
            base_o[m] = st.f_ones[ms]
            g_start[m] = st.f_start[ms]
        group_of_one = np.repeat(np.arange(n_groups), ends - starts + 1)
        rank = np.arange(len(ones)) - starts[group_of_one]  # 0-based rank within group
        n_thru = base_n[group_of_one] + self.w_cum(ones) - base_w[group_of_one]
        ones_thru = base_o[group_of_one] + rank + 1
        size_d = (n_thru if spec.min_duration.kind == "rows"
                  else time[ones] - g_start[group_of_one])
        certain_row = size_d >= spec.min_duration.amount

        # frame ids: carried certain frames keep theirs; others get one at their anchor
        was_certain = np.zeros(n_groups, dtype=bool)
        if len(m):
            was_certain[m] = st.frame_id[g_slot[m]] >= 0
        becomes_certain = certain_row[ends] & ~was_certain
        g_id = np.full(n_groups, -1, dtype=np.int64)
        if len(m):
            g_id[m] = st.frame_id[g_slot[m]]
        if becomes_certain.any():
            idx = np.flatnonzero(becomes_certain)
            gs = g_slot[idx]
            # rank among the key's newly certain groups (groups are sorted by slot, time)
            first_of_slot = np.r_[True, gs[1:] != gs[:-1]]
            seq = np.arange(len(idx)) - np.flatnonzero(first_of_slot)[
                np.cumsum(first_of_slot) - 1]
            g_id[idx] = st.next_id[gs] + seq
            np.add.at(st.next_id, gs, 1)

        outputs = []
        fragments = None
        if spec.fragment_every is not None:
            partial_rows, fragments = self._partials(ones, group_of_one, starts, ends, g_slot,
                                                     g_id, g_start, n_thru, ones_thru,
                                                     certain_row, was_certain)
            outputs.append(partial_rows)

        # closing: a group is closed if something follows its last satisfying row in the batch
        nb = b_row + 1
        has_next = ~self.key_end[b_row]
        nb_safe = np.minimum(nb, self.n - 1)
        end = np.where(self.pre_m[nb_safe] > 0, time[b_row] + (spec.schedule or 0),
                       time[nb_safe])
        if spec.missing == "unsatisfied":
            closed = has_next
        else:
            run_last = np.append(self.first_row[1:], self.n)[self.run_of(b_row)] - 1
            closed = has_next & (self.zero_cum[run_last] > self.zero_cum[b_row])
        n_last = n_thru[ends]
        ones_last = ones_thru[ends]
        fin = np.flatnonzero(closed & (g_id >= 0))
        outputs.append(_frame_rows(self.f, g_slot[fin], g_id[fin], g_start[fin], end[fin],
                                   time[b_row[fin]], n_last[fin], n_last[fin] - ones_last[fin],
                                   final=True))
        # state: reset keys whose carried frame closed inside a merged group, then store the
        # open (last, unclosed) group of each key
        _reset_open(st, g_slot[merged])
        open_g = np.flatnonzero(~closed)
        s = g_slot[open_g]
        st.open[s] = True
        st.f_start[s] = g_start[open_g]
        st.f_last[s] = time[b_row[open_g]]
        st.f_n[s] = n_last[open_g]
        st.f_ones[s] = ones_last[open_g]
        st.frame_id[s] = g_id[open_g]
        st.pend_n[s] = 0
        st.pend_end[s] = _NONE
        if fragments is not None:
            anchor, k_done = fragments
            st.anchor[s] = anchor[open_g]
            st.k_done[s] = k_done[open_g]
        if spec.missing == "satisfying" and len(open_g):
            run_last = np.append(self.first_row[1:], self.n)[self.run_of(b_row[open_g])] - 1
            st.pend_n[s] = self.w_cum(run_last) - self.w_cum(b_row[open_g])
            pending = has_next[open_g]
            st.pend_end[s[pending]] = end[open_g][pending]
        return pd.concat([o for o in outputs if len(o)] or [self.f.empty_output()],
                         ignore_index=True)

    def _partials(self, ones, group_of_one, starts, ends, g_slot, g_id, g_start, n_thru,
                  ones_thru, certain_row, was_certain) -> tuple[pd.DataFrame, tuple]:
        st, spec, time = self.st, self.spec, self.time
        every = spec.fragment_every
        measure = n_thru if every.kind == "rows" else time[ones]
        n_groups = len(starts)
        # anchor of each group: carried (already certain) or its first certain row
        first_certain = np.full(n_groups, -1, dtype=np.int64)
        cert_idx = np.flatnonzero(certain_row)
        if len(cert_idx):
            g_of = group_of_one[cert_idx]
            first_flag = np.r_[True, g_of[1:] != g_of[:-1]]
            first_certain[g_of[first_flag]] = cert_idx[first_flag]
        anchor = np.zeros(n_groups, dtype=np.int64)
        k_prev = np.full(n_groups, -1, dtype=np.int64)  # fragments already emitted (-1: none)
        has_new_anchor = (first_certain >= 0) & ~was_certain
        anchor[has_new_anchor] = measure[first_certain[has_new_anchor]]
        carried = np.flatnonzero(was_certain)
        anchor[carried] = st.anchor[g_slot[carried]]
        k_prev[carried] = st.k_done[g_slot[carried]]
        g_has_anchor = has_new_anchor | was_certain
        row_ok = g_has_anchor[group_of_one] & certain_row
        k = np.where(row_ok, (measure - anchor[group_of_one]) // every.amount, -1)
        # emit where k first exceeds the group's running max (k is non-decreasing in a group)
        prev_k = np.empty_like(k)
        prev_k[1:] = k[:-1]
        first_in_group = np.zeros(len(ones), dtype=bool)
        first_in_group[starts] = True
        prev_k[first_in_group] = k_prev
        emit = row_ok & (k > prev_k)
        e = np.flatnonzero(emit)
        g = group_of_one[e]
        out = _frame_rows(self.f, g_slot[g], g_id[g], g_start[g], None, time[ones[e]],
                          n_thru[e], n_thru[e] - ones_thru[e], final=False)
        return out, (anchor, np.maximum(k[ends], k_prev))
