"""The one framing engine: threshold, boundary, delta, aggregate and custom framings (Def. 5).

A *framing* decides, row by row, what each known value does to the frame of its key (the
contract: :mod:`windowkit.core.frames.framing`). This engine does everything else, the same way
for every framing: keys, time order and ties, missing values and absent reports, minimum
duration, frame ids, partial and final fragments, the watermark, frame extent and state bytes.

Semantics, per key, over the key's *elements* in time order: its rows and, with a reporting
``schedule`` of period P, the absent reports a gap implies (``round(gap / P) - 1``, halves up,
at ``a + P, a + 2P, ...``: the rule of threshold frames). A row whose value is null, NaN or
infinite is a missing element; absent reports are missing elements too.

* A framing sees only known values. For each it answers with bit flags: ``BREAK`` (the open
  frame ends before this row), ``JOIN`` (the row joins the open frame, or opens one) and, for
  minimal framings, ``SATISFIED`` (the frame including this row satisfies its predicate).
  A row that does not join is in no frame and ends the open frame.
* ``missing="unsatisfied"``: a missing element ends the open frame and resets the framing's
  state (the next known row starts afresh). ``missing="satisfying"``: missing elements are
  bridged: the framing never sees them; they count in ``n_tuples`` and ``n_missing`` of the
  frame when a later row of the same frame follows them. Either way a frame starts and ends on
  a known row (as in NiagaraST: "a frame cannot begin with a missing value").
* Maximal framings (``span="maximal"``): a frame is reported when it is at least
  ``min_duration`` long (``n_tuples >= D`` rows, or ``last - start >= D`` in time); it is
  *certain* at its first row where it reaches that length: it gets its ``frame_id`` and, with
  ``fragment_every``, a ``partial`` row there and then at the first row past each further
  multiple of ``fragment_every`` (the rule of threshold frames).
* ``frame_id`` (every framing; a minimal frame gets it when it completes) is the time of the
  frame's first row, so it names one frame of its key with nothing kept per key: frames of a
  key do not overlap. Frames of a key that start at one instant (tied rows each in a frame of
  its own) take one past the key's previous id instead (:func:`frame_id_of`), so a key's ids
  increase. A key that owes nothing (no frame open or waiting, the framing's state fresh) once
  the watermark passed its last row and its last id leaves the state
  (:meth:`SequenceFramer.settled_keys`): its next row starts afresh with the same output.
* Minimal framings (``span="minimal"``): a frame closes after the first row where the framing
  says ``SATISFIED`` and the frame is at least ``min_duration`` long; a frame that ends
  otherwise (a missing element, a ``BREAK``, the end of input) never satisfied its predicate
  and is not reported. Such a frame exists only once it is complete, so there are no partial
  fragments (``fragment_every`` is refused).
* ``end`` is the time of the key's element right after the frame's last row: the next row
  (the one that broke the frame, or the first row of the next frame) or a missing element. A
  frame still open when the watermark shows that the report due at ``last + P`` is absent ends
  there (``end = last + P``) under ``missing="unsatisfied"``, and a minimal frame's final row
  waits for that element or that watermark. At the end of a bounded input with no next
  element, ``end = last + P`` with a schedule and ``last + 1`` (one microsecond) without.
* Frame extent (appendix F), for every framing: ``extent="conservative"`` reports ``start`` =
  the first row of the frame; ``extent="liberal"`` moves ``start`` back to the element before
  it (the last report that was not in the frame: a row or an absent report), when there is
  one. ``end`` is the next element after the frame in both cases, so a liberal frame spans
  from the last report outside it to the next report outside it (the freezer example).
* Rows of a key are taken in time order. Rows of a key at the same time (``duplicates``):
  with ``"keep"`` all are elements, in a fixed order whatever their arrival order: by value
  (missing last), or for a framing of truth values (``Framing.truth_valued``, threshold
  frames) unsatisfied, missing, satisfying. For truth values only, ``"any"`` / ``"all"`` make
  them one element that holds if any / all of them hold (else missing if one is missing, else
  not holding / else not holding if one does not hold, else missing); other framings refuse
  them with ``ValueError``. Across batches, a key's time must not go backwards (the
  :class:`~windowkit.core.operator.EventTimeRunner` guarantees it, and releases a time's rows
  together).
"""

from __future__ import annotations

import inspect
import types
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import pandas as pd

from windowkit.core.durations import Duration, to_micros
from windowkit.core.frames.framing import (
    DUPLICATE_POLICIES,
    EXTENTS,
    MISSING_POLICIES,
    DuplicatePolicy,
    Extent,
    Framing,
    MissingPolicy,
)
from windowkit.core.key_index import KeyIndex
from windowkit.core.operator import KEY, TIME, StreamOperator
from windowkit.core.ordering import factorize_keys, float_rank
from windowkit.core.registry import lookup, name_of_old_path, register, registered_name
from windowkit.core.serialization import StateFormatError, pack_state, unpack_state

try:
    from windowkit.core.serialization import state_decoder
except ImportError:  # pragma: no cover - the shared decoder wrapper is newer than this module
    def state_decoder(decode):  # noqa: ANN001, ANN202
        return decode
from windowkit.core.validation import check_choice

VALUE = "value"
"""The input column a framing watches."""
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
"""The output columns of every framing."""
FRAME_STATUSES = ("partial", "final")
"""A frame's ``status``: a fragment of a frame still open, or the whole frame (it has an end)."""

_NONE = np.iinfo(np.int64).min
# the frame_id field of a key without a certain frame, as state bytes have always held it
_NO_ID = -1
# frame status of a key: nothing open, a frame open, a (minimal) frame waiting for its end
_IDLE, _OPEN, _PENDING = 0, 1, 2


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


def _keys_array(index: KeyIndex) -> np.ndarray:
    """Keys as int64 if every one is an integer (as state bytes store them), else as objects."""
    keys = index.array()
    if len(keys) and all(isinstance(k, (int, np.integer)) for k in keys):
        return keys.astype(np.int64)
    return keys


@dataclass(frozen=True)
class SequenceFrameSpec:
    """Validated options every framing takes (the engine's, not the framing's decision).

    Parameters
    ----------
    min_duration : Duration
        Shortest reported frame, in rows or in time.
    missing : {"unsatisfied", "satisfying"}
        Whether missing elements end frames or are bridged.
    schedule : int or None
        Reporting period in microseconds; absent reports become missing elements.
    fragment_every : Duration or None
        Emit partial fragments of open frames this often (maximal framings only).
    extent : {"conservative", "liberal"}
        Where ``start`` is reported (see the module docstring).
    duplicates : {"keep", "any", "all"}
        Rows of one key at one time: all kept in a fixed order, or (truth values only) one
        report holding if any / all of them hold (see the module docstring).

    Examples
    --------
    >>> SequenceFrameSpec.create("2 rows", extent="liberal").extent
    'liberal'
    >>> SequenceFrameSpec.create("2 rows", extent="generous")
    Traceback (most recent call last):
    ...
    ValueError: `extent` must be one of 'conservative', 'liberal'; got 'generous'
    """

    min_duration: Duration
    missing: MissingPolicy = "unsatisfied"
    schedule: int | None = None
    fragment_every: Duration | None = None
    extent: Extent = "conservative"
    duplicates: DuplicatePolicy = "keep"

    def __post_init__(self) -> None:
        check_choice("missing", self.missing, MISSING_POLICIES)
        check_choice("extent", self.extent, EXTENTS)
        check_choice("duplicates", self.duplicates, DUPLICATE_POLICIES)
        check_schedule(self.schedule)

    @classmethod
    def create(
        cls,
        min_duration: str | int | Duration = "1 rows",
        missing: MissingPolicy = "unsatisfied",
        schedule: str | int | None = None,
        fragment_every: str | int | Duration | None = None,
        extent: Extent = "conservative",
        duplicates: DuplicatePolicy = "keep",
    ) -> SequenceFrameSpec:
        """Parse user-facing values (``"3 rows"``, ``"90 seconds"``, timedeltas).

        Examples
        --------
        >>> SequenceFrameSpec.create("90 seconds", schedule="30 seconds").schedule
        30000000
        >>> SequenceFrameSpec.create("3 rows", missing="sometimes")
        Traceback (most recent call last):
        ...
        ValueError: `missing` must be one of 'unsatisfied', 'satisfying'; got 'sometimes'
        """
        return cls(missing=missing, extent=extent, duplicates=duplicates,
                   **parse_frame_lengths(min_duration, schedule, fragment_every))

    def to_meta(self) -> dict[str, Any]:
        """JSON-able form, for state bytes."""
        frag = self.fragment_every
        return {"min_duration": [self.min_duration.kind, self.min_duration.amount],
                "missing": self.missing, "schedule": self.schedule,
                "fragment_every": None if frag is None else [frag.kind, frag.amount],
                "extent": self.extent, "duplicates": self.duplicates}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> SequenceFrameSpec:
        """Inverse of :meth:`to_meta`, checked as user values are (state bytes are input)."""
        frag = meta["fragment_every"]
        return cls.create(min_duration=Duration(*meta["min_duration"]), missing=meta["missing"],
                          schedule=meta["schedule"],
                          fragment_every=None if frag is None else Duration(*frag),
                          extent=meta.get("extent", "conservative"),
                          duplicates=meta.get("duplicates", "keep"))  # older: rows all kept


_INT_FIELDS = ("last_time", "status", "f_start", "f_last", "f_before", "f_n", "f_miss",
               "pend_n", "pend_end", "frame_id", "anchor", "k_done", "next_id")


class _KeyStates:
    """Per-key state: int64 arrays indexed by slot, and the framings' float state rows."""

    def __init__(self, initial: np.ndarray, keys: np.ndarray | list = ()) -> None:
        self.initial = np.asarray(initial, dtype=np.float64)
        self.index = KeyIndex(keys)
        self.ints = {name: np.zeros(0, dtype=np.int64) for name in _INT_FIELDS}
        self.fstate = np.zeros((0, len(self.initial)), dtype=np.float64)

    @property
    def keys(self) -> list:
        return self.index.keys

    def slots(self, uniques: np.ndarray) -> np.ndarray:
        held = len(self.index)
        slots = self.index.slots(uniques)
        grow = len(self.index) - held
        if grow:
            for name, arr in self.ints.items():
                fill = _NONE if name in ("last_time", "pend_end", "f_before", "next_id") else 0
                fill = _NO_ID if name == "frame_id" else fill
                self.ints[name] = np.concatenate([arr, np.full(grow, fill, dtype=np.int64)])
            self.fstate = np.concatenate([self.fstate, np.tile(self.initial, (grow, 1))])
        return slots


@register()
class SequenceFramer(StreamOperator):
    """Incremental framing function (Definition 5) driven by a framing's row decisions.

    Not used directly: :class:`~windowkit.core.frames.ThresholdFramer`,
    :class:`~windowkit.core.frames.BoundaryFramer`, :class:`~windowkit.core.frames.DeltaFramer`,
    :class:`~windowkit.core.frames.AggregateFramer` and
    :class:`~windowkit.core.frames.CustomFramer` build one. The semantics are in this module's
    docstring. Input batches have columns ``key``, ``time`` (int64 µs) and ``value`` (float;
    null/NaN/inf is missing); the output has the columns of :data:`OUTPUT_SCHEMA`.
    """

    FORMAT_TAG = "SEQFRAME"
    FORMAT_VERSION = 1
    ORDERS_ROWS_ITSELF = True
    # every per-key field lives in _KeyStates; the framing and the spec are parameters
    KEY_PARTITIONED = True

    def __init__(self, framing: Any, spec: SequenceFrameSpec) -> None:
        if framing.span not in ("maximal", "minimal"):
            msg = f"`span` of {type(framing).__name__} must be 'maximal' or 'minimal'; " \
                  f"got {framing.span!r}"
            raise ValueError(msg)
        if framing.span == "minimal" and spec.fragment_every is not None:
            msg = ("`fragment_every` must be None for a minimal framing: its frames exist only "
                   f"once complete; got {spec.fragment_every}")
            raise ValueError(msg)
        if spec.duplicates != "keep" and not getattr(framing, "truth_valued", False):
            msg = (f"`duplicates` must be 'keep' for {type(framing).__name__}: 'any' and 'all' "
                   f"apply to truth values (threshold frames) only; got {spec.duplicates!r}")
            raise ValueError(msg)
        self.framing = framing
        self.spec = spec
        # the highest watermark advance() was given: keys settled before it may leave
        self._watermark: int | None = None
        initial = np.asarray(framing.initial_state(), dtype=np.float64).ravel()
        self._state = _KeyStates(initial)

    # ------------------------------------------------------------------ contract
    @property
    def output_schema(self) -> list[tuple[str, str]]:
        """Output columns: key, frame_id, start, end, last, n_tuples, n_missing, status."""
        return OUTPUT_SCHEMA

    @property
    def derived_outputs(self) -> dict[str, str]:
        """``status``: a frame is final exactly when it has an end (an engine need not carry
        the label of every frame; a row without a frame, such as a rejected one, has none).

        Examples
        --------
        >>> from windowkit.core.frames import DeltaFramer
        >>> DeltaFramer(1.0).derived_outputs["status"]
        "CASE WHEN `start` IS NOT NULL THEN IF(`end` IS NULL, 'partial', 'final') END"
        """
        return {"status": _STATUS_SQL}

    @property
    def event_time_output(self) -> str | None:
        """``end``, for framings without a schedule: a final frame's end is then the row that
        closed it. On a stream the engine releases a shard's rows as soon as the next
        watermark is known to pass them (its newest row less the delay), so the frame ends
        after the watermark in force when it is emitted, as Spark requires of the column
        (``start`` and ``last`` would not be: a long frame starts long before it closes).
        With a schedule a frame can be closed by the watermark itself (a missed report's
        deadline), its end then behind that watermark, and Spark would stop the query
        (EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED): such a framing declares none. A
        partial fragment has no end, hence no event time: fill it by ``last``, or take the
        final rows.

        Examples
        --------
        >>> from windowkit.core.frames import ThresholdFramer
        >>> ThresholdFramer("2 rows").event_time_output
        'end'
        >>> ThresholdFramer("2 rows", schedule="30 seconds").event_time_output is None
        True
        """
        return "end" if self.spec.schedule is None else None

    @property
    def input_schema(self) -> list[tuple[str, str]]:
        """``value``, a float (null, NaN or infinite: missing)."""
        return [(VALUE, "float64")]

    @property
    def n_keys(self) -> int:
        """Number of keys held: those seen, less the settled ones (:meth:`settled_keys`)."""
        return len(self._state.keys) - int(self.settled_keys().sum())

    @property
    def open_frames(self) -> int:
        """Number of keys with a frame open or waiting for its end."""
        return int((self._state.ints["status"] != _IDLE).sum())

    def process(self, batch: pd.DataFrame) -> pd.DataFrame:
        """Consume a batch with columns ``key``, ``time`` (int64 µs) and ``value``.

        Examples
        --------
        >>> from windowkit.core.frames import DeltaFramer
        >>> f = DeltaFramer(2.0)
        >>> f.process(pd.DataFrame({"key": "a", "time": [1, 2, 3], "value": [0.0, 1.0, 2.5]}))
        ... # doctest: +NORMALIZE_WHITESPACE
          key  frame_id  start  end  last  n_tuples  n_missing status
        0   a         1      1    3     2         2          0  final
        """
        keys = batch[KEY] if KEY in batch else None
        return self.update(batch[TIME].to_numpy(), batch[VALUE].to_numpy(), key=keys)

    def update(self, time: np.ndarray, value: np.ndarray, key: Any = None) -> pd.DataFrame:
        """Consume one batch of event times (int64 µs), values and keys.

        Parameters
        ----------
        time : numpy.ndarray of int64
            Event times; any order within the batch.
        value : array-like of float
            The attribute the framing watches; None/NaN/inf are missing.
        key : array-like, optional
            Grouping keys (a ``pandas.Categorical`` is used without re-hashing); one key if
            omitted.

        Returns
        -------
        pandas.DataFrame
            New partial and final rows.

        Examples
        --------
        >>> from windowkit.core.frames import BoundaryFramer
        >>> f = BoundaryFramer(10.0)
        >>> f.update(np.array([1, 2, 3]), [3.0, 8.0, 12.0])[["start", "end", "last"]]
           start  end  last
        0      1    3     2
        """
        value = pd.to_numeric(pd.Series(value, copy=False), errors="coerce")
        return self._frame(time, value.to_numpy(dtype=np.float64, na_value=np.nan), key)

    def _frame(self, time: np.ndarray, value: np.ndarray, key: Any) -> pd.DataFrame:
        """:meth:`update` once the values are float64 (NaN missing)."""
        time = np.asarray(time, dtype=np.int64)
        if key is None:
            key = np.zeros(len(time), dtype=np.int64)
        if not (len(time) == len(value) == len(key)):
            msg = (f"`time`, `value` and `key` must have equal lengths; got {len(time)}, "
                   f"{len(value)}, {len(key)}")
            raise ValueError(msg)
        if len(time) == 0:
            return self.empty_output()
        codes, uniques = factorize_keys(key)
        slot = self._state.slots(uniques)[codes]
        truth = getattr(self.framing, "truth_valued", False)
        slot, time, value, interleaved = _order_rows(
            slot, time, value, len(self._state.keys), _truth_rank if truth else float_rank)
        if self.spec.duplicates != "keep":
            slot, time, value = _one_report_per_tie(slot, time, value, self.spec.duplicates)
        self._check_backwards(slot, time)
        return self._run(slot, time, value, interleaved)

    def advance(self, watermark: int) -> pd.DataFrame:
        """Settle frames whose next scheduled report is known absent by ``watermark``.

        With a schedule of period P, a row arriving after the watermark has a gap of at least
        ``ceil(1.5 P)`` to the key's last row, so the report due at ``last + P`` is absent: an
        open frame ends there under ``missing="unsatisfied"``, and a complete minimal frame
        learns its end.

        Examples
        --------
        >>> from windowkit.core.frames import DeltaFramer
        >>> f = DeltaFramer(5.0, schedule=10)
        >>> _ = f.update(np.array([0, 10]), [1.0, 2.0])
        >>> f.advance(23).empty, f.advance(24)[["start", "end"]].values.tolist()
        (True, [[0, 20]])
        """
        if self._watermark is None or watermark > self._watermark:
            self._watermark = int(watermark)
        deadline = self._deadlines()
        slots = (np.zeros(0, dtype=np.int64) if deadline is None
                 else np.flatnonzero(deadline <= watermark))
        out = self.empty_output()
        if len(slots):
            end = self._state.ints["f_last"][slots] + self.spec.schedule
            out = self._close(slots, end, reset=True)
        self._forget_settled()
        return out

    def finish(self) -> pd.DataFrame:
        """End of a bounded input: close every open frame.

        Examples
        --------
        >>> from windowkit.core.frames import DeltaFramer
        >>> f = DeltaFramer(5.0)
        >>> _ = f.update(np.array([5, 6]), [1.0, 2.0])
        >>> f.finish()[["start", "last", "end"]].values.tolist()
        [[5, 6, 7]]
        """
        ints = self._state.ints
        slots = np.flatnonzero(ints["status"] != _IDLE)
        tail = ints["f_last"][slots] + (self.spec.schedule or 1)
        pend = ints["pend_end"][slots]
        end = np.where(pend != _NONE, pend, tail)
        return self._close(slots, end, reset=True)

    def next_deadline(self) -> int | None:
        """The smallest watermark at which :meth:`advance` settles a frame, if any.

        Examples
        --------
        >>> from windowkit.core.frames import DeltaFramer
        >>> f = DeltaFramer(5.0, schedule=10)
        >>> _ = f.update(np.array([0]), [1.0])
        >>> f.next_deadline()
        14
        """
        deadline = self._deadlines()
        if deadline is None or not np.any(deadline != np.iinfo(np.int64).max):
            return None
        return int(deadline.min())

    # ------------------------------------------------------------------ settled keys
    def settled_keys(self) -> np.ndarray:
        """Mask over the slots of keys that owe nothing: no frame open or waiting, the
        framing's state as fresh, and nothing a later row of theirs could need.

        A later row of such a key is after the watermark (:meth:`advance`), so after its last
        row and after its last ``frame_id``: it starts afresh as a new key would, with the
        same output. Such keys leave the state (:meth:`key_state`, :meth:`to_bytes`), so
        the state follows the live keys, not every key ever seen. A liberal ``extent`` keeps
        every key: the next frame's ``start`` is the key's last report before it.

        Examples
        --------
        >>> from windowkit.core.frames import ThresholdFramer
        >>> f = ThresholdFramer("1 rows")
        >>> _ = f.update(np.array([1, 2, 3]), [True, False, True], key=np.array(["a", "a", "b"]))
        >>> _ = f.advance(3)
        >>> f.key_state()[0].tolist()  # "a"'s frame closed at 2; "b"'s is open
        ['b']
        """
        st, watermark = self._state, self._watermark
        if watermark is None or self.spec.extent == "liberal" or not len(st.keys):
            return np.zeros(len(st.keys), dtype=bool)
        ints = st.ints
        next_id = ints["next_id"]
        fresh = (st.fstate == st.initial) | (np.isnan(st.fstate) & np.isnan(st.initial))
        # next_id - 1 is the key's last frame_id; _NONE: it never had one
        return ((ints["status"] == _IDLE) & (ints["last_time"] <= watermark)
                & ((next_id == _NONE) | (next_id - 1 <= watermark)) & fresh.all(axis=1))

    def _forget_settled(self) -> None:
        """Drop the settled keys from memory once they are a quarter of those held (each
        drop copies the held keys' state, paid for by the keys settled since the last one);
        until then :meth:`key_state` and :meth:`to_bytes` leave them out."""
        settled = self.settled_keys()
        n_settled = int(settled.sum())
        if n_settled and 4 * n_settled >= len(settled):
            self._keep(np.flatnonzero(~settled))

    def _keep(self, slots: np.ndarray) -> None:
        """Hold only the keys at ``slots`` (increasing)."""
        st = self._state
        kept = _KeyStates(st.initial, st.index.array()[slots])
        kept.ints = {name: arr[slots] for name, arr in st.ints.items()}
        kept.fstate = st.fstate[slots]
        self._state = kept

    def _live(self) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
        """The keys not settled, their int fields and their framing state."""
        st = self._state
        keys = _keys_array(st.index)
        settled = self.settled_keys()
        if not settled.any():
            return keys, st.ints, st.fstate
        live = ~settled
        return keys[live], {name: arr[live] for name, arr in st.ints.items()}, st.fstate[live]

    # ------------------------------------------------------------------ per-key parts
    def key_state(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The keys held, in slot order, and their state arrays (``fstate``: the framing's
        float state, one row per key); settled keys (:meth:`settled_keys`) are left out.

        Examples
        --------
        >>> from windowkit.core.frames import DeltaFramer
        >>> f = DeltaFramer(2.0)
        >>> _ = f.update(np.array([1, 2]), [0.0, 1.0], key=np.array(["b", "a"]))
        >>> keys, arrays = f.key_state()
        >>> keys.tolist(), arrays["fstate"].shape
        (['b', 'a'], (2, 2))
        """
        keys, ints, fstate = self._live()
        return keys, {**ints, "fstate": fstate}

    def load_key_state(self, keys: np.ndarray, arrays: dict[str, np.ndarray]) -> None:
        """Hold exactly ``keys`` with the state ``arrays`` (of :meth:`key_state`).

        Examples
        --------
        >>> from windowkit.core.frames import DeltaFramer
        >>> f, g = DeltaFramer(2.0), DeltaFramer(2.0)
        >>> _ = f.update(np.array([1]), [0.0], key=np.array(["a"]))
        >>> g.load_key_state(*f.key_state())
        >>> g.finish()["key"].tolist()
        ['a']
        """
        st = self._state
        if (set(arrays) != {*_INT_FIELDS, "fstate"}
                or any(len(a) != len(keys) for a in arrays.values())
                or arrays["fstate"].shape[1:] != st.initial.shape):
            msg = f"{type(self).__name__} key state: wrong fields or shapes"
            raise ValueError(msg)
        state = _KeyStates(st.initial, keys)
        state.ints = {name: np.asarray(arrays[name], dtype=np.int64) for name in _INT_FIELDS}
        state.fstate = np.asarray(arrays["fstate"], dtype=np.float64)
        self._state = state

    def key_deadlines(self, arrays: dict[str, np.ndarray] | None = None) -> np.ndarray | None:
        """Each key's smallest watermark at which :meth:`advance` settles its frame, in
        :meth:`key_state` order.

        Examples
        --------
        >>> from windowkit.core.frames import DeltaFramer
        >>> f = DeltaFramer(5.0, schedule=10)
        >>> _ = f.update(np.array([0]), [1.0])
        >>> f.key_deadlines().tolist()
        [14]
        """
        deadlines = self._deadlines()
        settled = self.settled_keys()
        return deadlines if deadlines is None or not settled.any() else deadlines[~settled]

    def _deadlines(self) -> np.ndarray | None:
        period = self.spec.schedule
        if period is None:
            return None
        ints = self._state.ints
        status = ints["status"]
        waits = status == _PENDING
        if self.spec.missing == "unsatisfied":
            waits = waits | (status == _OPEN)
        due = ints["f_last"] + (3 * period + 1) // 2 - 1
        return np.where(waits, due, np.iinfo(np.int64).max)

    # ------------------------------------------------------------------ the pass
    def _check_backwards(self, slot: np.ndarray, time: np.ndarray) -> None:
        first = _first_rows(slot, len(self._state.keys))  # each key's first row in this batch
        prev = self._state.ints["last_time"][slot[first]]
        bad = (prev != _NONE) & (time[first] < prev)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            key = self._state.keys[slot[first][i]]
            msg = (f"`time` went backwards for key {key!r}: {time[first][i]} after {prev[i]}; "
                   "rows of a key must arrive in time order")
            raise ValueError(msg)

    def _run(self, slot: np.ndarray, time: np.ndarray, value: np.ndarray,
             interleaved: bool = False) -> pd.DataFrame:
        """Rows through the framing loop. ``interleaved``: the keys' rows are interleaved
        (each key's in time order); the output is then put in key order, as sorted rows give.
        """
        spec, st = self.spec, self._state
        period = spec.schedule or 0
        if spec.schedule is not None:
            prev = _previous_times(slot, time, st.ints["last_time"])
            gap = np.where(prev != _NONE, time - prev, 0)
            pre_m = np.maximum(0, (2 * gap + period) // (2 * period) - 1)
        else:
            pre_m = np.zeros(len(time), dtype=np.int64)
        frag = spec.fragment_every
        loop_args = (
            slot, time, value, pre_m, period, spec.missing == "unsatisfied",
            self.framing.span == "minimal", spec.min_duration.kind == "rows",
            spec.min_duration.amount, 0 if frag is None else (1 if frag.kind == "rows" else 2),
            0 if frag is None else frag.amount,
            *(st.ints[name] for name in _INT_FIELDS), st.fstate, st.initial,
        )
        builtin = getattr(self.framing, "builtin_kind", None)
        kernel = _kernel_of(self.framing)
        kind = -1 if builtin is None else builtin
        if builtin is not None or kernel is not None:
            params = np.asarray(self.framing.kernel_params(), dtype=np.float64)
            loop = _frame_loop if builtin is not None else _user_loop(kernel)
        else:
            params, loop = self.framing, _frame_loop_py

        chunks, i = [], 0
        n = len(time)
        while i < n:
            cap = max(64, (n - i) // 4 + 16) if loop is not _frame_loop_py else 3 * (n - i) + 3
            buf = _Outputs(cap)
            i, m = loop(kind, params, i, *loop_args, *buf.arrays())
            chunks.append(buf.written(m))
        cols = chunks[0] if len(chunks) == 1 else {
            name: np.concatenate([c[name] for c in chunks]) for name in _Outputs.NAMES}
        order = (np.argsort(_radix_keys(cols["slot"]), kind="stable")
                 if interleaved and len(cols["slot"]) > 1 else None)
        return _Outputs.frame(self, cols, order)

    def _close(self, slots: np.ndarray, end: np.ndarray, *, reset: bool) -> pd.DataFrame:
        """Close the frames of ``slots`` at ``end`` (finish, or a watermark)."""
        ints = self._state.ints
        status = ints["status"][slots]
        minimal = self.framing.span == "minimal"
        report = (status == _PENDING) | ((status == _OPEN) & (not minimal)
                                         & (ints["frame_id"][slots] != _NO_ID))
        s = slots[report]
        out = self._rows(s, ints["frame_id"][s], ints["f_start"][s], ints["f_before"][s],
                         end[report], ints["f_last"][s], ints["f_n"][s], ints["f_miss"][s],
                         final=np.ones(len(s), dtype=np.bool_))
        opened = slots[status == _OPEN]
        if reset and self.spec.missing == "unsatisfied":
            # the absent report (or the end of input) is a missing element: fresh state
            self._state.fstate[opened] = self._state.initial
        ints["status"][slots] = _IDLE
        ints["frame_id"][slots] = _NO_ID
        ints["pend_n"][slots] = 0
        ints["pend_end"][slots] = _NONE
        return out

    def _rows(self, slots, frame_id, start, before, end, last, n, miss, *,
              final: np.ndarray) -> pd.DataFrame:
        """The output rows of frames: the mask ``final`` tells final frames, which have an
        end, from partial ones."""
        if len(slots) == 0:
            return self.empty_output()
        if self.spec.extent == "liberal":
            start = np.where(before != _NONE, before, start)
        # A frame of columns, each a block of its own: pandas would copy the int columns into
        # one 2-D block first (a quarter of the framing's time on millions of frames).
        return pd.DataFrame({
            KEY: self._state.index.array()[slots],
            "frame_id": np.asarray(frame_id, dtype=np.int64),
            "start": np.asarray(start, dtype=np.int64),
            "end": pd.arrays.IntegerArray(np.asarray(end, dtype=np.int64), ~final),
            "last": np.asarray(last, dtype=np.int64), "n_tuples": np.asarray(n, dtype=np.int64),
            "n_missing": np.asarray(miss, dtype=np.int64),
            "status": _STATUS_LABELS[final.view(np.int8)],
        }, copy=False)

    # ------------------------------------------------------------------ serialization
    def framing_meta(self) -> dict[str, Any]:
        """The framing's class and parameters, for state bytes."""
        return {"name": registered_name(type(self.framing)),
                "params": self.framing.get_params()}

    def to_bytes(self) -> bytes:
        """Serialize the framing, the options and every key's state.

        Examples
        --------
        >>> from windowkit.core.frames import AggregateFramer
        >>> f = AggregateFramer("sum", ">", 10.0)
        >>> _ = f.update(np.array([1, 2]), [4.0, 5.0], key=np.array(["a", "a"]))
        >>> g = AggregateFramer.from_bytes(f.to_bytes())
        >>> g.update(np.array([3, 4]), [6.0, 1.0], key=np.array(["a", "a"]))[["start", "end"]]
           start  end
        0      1    4
        """
        st = self._state
        keys, ints, fstate = self._live()
        integer_keys = bool(keys.dtype == np.int64)
        meta = {"spec": self.spec.to_meta(), "framing": self.framing_meta(),
                "integer_keys": integer_keys, "state_size": int(st.fstate.shape[1])}
        arrays = dict(ints)
        arrays["fstate"] = fstate
        arrays["initial"] = st.initial
        arrays["keys"] = keys
        return pack_state(self.FORMAT_TAG, self.FORMAT_VERSION, meta, arrays)

    @classmethod
    @state_decoder
    def from_bytes(cls, blob: bytes) -> SequenceFramer:
        """Rebuild a framer from :meth:`to_bytes` output (checked; clear errors).

        Examples
        --------
        >>> from windowkit.core.frames import DeltaFramer
        >>> DeltaFramer.from_bytes(b"WKIT" + bytes(30))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        windowkit.core.serialization.StateFormatError: ...unsupported windowkit container version 0
        """
        meta, arrays = unpack_state(blob, cls.FORMAT_TAG, cls.FORMAT_VERSION)
        try:
            spec = SequenceFrameSpec.from_meta(meta["spec"])
            framing = _framing_from_meta(meta["framing"])
            framer = cls._rebuild(framing, spec)
            st = framer._state
            n_keys = len(arrays["keys"])
            for name in _INT_FIELDS:
                arr = np.asarray(arrays[name], dtype=np.int64)
                if arr.shape != (n_keys,):
                    msg = f"field {name!r} has shape {arr.shape}, expected ({n_keys},)"
                    raise StateFormatError(msg)
                st.ints[name] = arr.copy()
            fstate = np.asarray(arrays["fstate"], dtype=np.float64)
            if fstate.shape != (n_keys, len(st.initial)):
                expected = (n_keys, len(st.initial))
                msg = f"framing state has shape {fstate.shape}, expected {expected}"
                raise StateFormatError(msg)
            st.fstate = fstate.copy()
            st.index = KeyIndex(arrays["keys"])
        except StateFormatError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            msg = f"{cls.__name__} state bytes do not decode: {exc!r}"
            raise StateFormatError(msg) from exc
        return framer

    @classmethod
    def _rebuild(cls, framing: Any, spec: SequenceFrameSpec) -> SequenceFramer:
        framer = cls.__new__(cls)
        SequenceFramer.__init__(framer, framing, spec)
        return framer


def _framing_from_meta(meta: dict[str, Any]) -> Any:
    """The framing named in state bytes, from windowkit's registry (older bytes: its class
    path, read through the registry too)."""
    name = meta["name"] if "name" in meta else name_of_old_path(meta["class"])
    return lookup(name, Framing, "framing")(**meta["params"])


#: ``status`` by finality: a row's label is taken from here, one reference per row.
_STATUS_LABELS = np.array(FRAME_STATUSES, dtype=object)
#: ``status`` as SQL over the other output columns (see ``derived_outputs``).
_STATUS_SQL = ("CASE WHEN `start` IS NOT NULL THEN IF(`end` IS NULL, '{}', '{}') END"
               .format(*FRAME_STATUSES))


class _Outputs:
    """Preallocated output columns the loop writes into."""

    NAMES = ("kind", "slot", "frame_id", "start", "before", "end", "last", "n", "miss")

    def __init__(self, capacity: int) -> None:
        self.cols = {name: np.empty(capacity, dtype=np.int64) for name in self.NAMES}

    def arrays(self) -> tuple[np.ndarray, ...]:
        return tuple(self.cols[name] for name in self.NAMES)

    def written(self, m: int) -> dict[str, np.ndarray]:
        """The first ``m`` rows the loop wrote."""
        return {name: arr[:m] for name, arr in self.cols.items()}

    @staticmethod
    def frame(framer: SequenceFramer, c: dict[str, np.ndarray],
              order: np.ndarray | None = None) -> pd.DataFrame:
        """The output rows the loop wrote, in ``order`` if given (each column is taken once)."""
        if len(c["kind"]) == 0:
            return framer.empty_output()

        def column(name: str) -> np.ndarray:
            # a copy either way: the frame must not hold the loop's longer buffers
            return c[name].copy() if order is None else c[name][order]

        before = column("before") if framer.spec.extent == "liberal" else None
        return framer._rows(column("slot"), column("frame_id"), column("start"), before,
                            column("end"), column("last"), column("n"), column("miss"),
                            final=column("kind") == 1)


def _truth_rank(value: np.ndarray) -> np.ndarray:
    """Order of tied rows of truth values: unsatisfied (0), missing (1), satisfying (2)."""
    return np.where(np.isfinite(value), np.where(value > 0, 2, 0), 1).astype(np.int8)


def _order_rows(slot: np.ndarray, time: np.ndarray, value: np.ndarray, n_slots: int,
                tie_rank: Any = float_rank) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """``(slot, time, value, interleaved)``: the rows as the framing loop takes them.

    The loop keeps each key's state apart, so it needs each key's rows in strict time order,
    not the keys one after the other: rows already so (what a shuffle delivers: keys
    interleaved, each in time order) are taken as they are (``interleaved`` True), and rows
    that a sort by time alone puts so are taken in time order; otherwise they are sorted by
    (slot, time, ``tie_rank(value)``), so that tied rows come in a fixed order whatever their
    arrival order (rows of equal rank keep it).
    """
    if len(slot) < 2 or _strictly_ordered(slot, time):
        return slot, time, value, False
    if _each_slot_in_time_order(slot, time, n_slots):
        return slot, time, value, True
    # Rows of many keys read from files are nearly in time order: a stable sort by time alone
    # (runs merged, about twice as fast as the lexsort below) orders them, unless a key has
    # two rows at one time, whose order then depends on their values.
    by_time = np.argsort(time, kind="stable")
    slot_by_time, time_by_time = slot[by_time], time[by_time]
    if _each_slot_in_time_order(slot_by_time, time_by_time, n_slots):
        return slot_by_time, time_by_time, value[by_time], True
    order = np.lexsort((tie_rank(value), time, slot))
    return slot[order], time[order], value[order], False


def _one_report_per_tie(slot: np.ndarray, time: np.ndarray, value: np.ndarray,
                        policy: DuplicatePolicy) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ordered by :func:`_order_rows` with truth ranks, one per tie of key and time.

    ``"any"`` keeps each tie's highest-ranked row (satisfying, else missing, else not), its
    last; ``"all"`` its lowest-ranked row, its first.

    Examples
    --------
    >>> s, t = np.zeros(4, np.int64), np.array([1, 1, 1, 2])
    >>> v = np.array([0.0, np.nan, 1.0, 1.0])
    >>> [_one_report_per_tie(s, t, v, policy)[2].tolist() for policy in ("any", "all")]
    [[1.0, 1.0], [0.0, 1.0]]
    """
    if len(time) < 2:
        return slot, time, value
    tied = (time[1:] == time[:-1]) & (slot[1:] == slot[:-1])
    if not tied.any():
        return slot, time, value
    keep = np.ones(len(time), dtype=bool)
    if policy == "any":
        keep[:-1] &= ~tied
    else:
        keep[1:] &= ~tied
    return slot[keep], time[keep], value[keep]


def _radix_keys(slot: np.ndarray) -> np.ndarray:
    """``slot`` as 16-bit integers when they fit: numpy sorts those by radix, in linear time."""
    return slot.astype(np.uint16) if slot.max(initial=0) < 2**16 else slot


@numba.njit(cache=True)
def _each_slot_in_time_order(slot, time, n_slots):  # pragma: no cover - compiled
    """Whether every slot's times strictly increase, in the rows' order."""
    seen = np.zeros(n_slots, dtype=np.bool_)
    last = np.zeros(n_slots, dtype=np.int64)
    for i in range(len(slot)):
        s = slot[i]
        if seen[s] and time[i] <= last[s]:
            return False
        seen[s] = True
        last[s] = time[i]
    return True


@numba.njit(cache=True)
def _first_rows(slot, n_slots):  # pragma: no cover - compiled
    """Mask of each slot's first row."""
    seen = np.zeros(n_slots, dtype=np.bool_)
    first = np.zeros(len(slot), dtype=np.bool_)
    for i in range(len(slot)):
        if not seen[slot[i]]:
            seen[slot[i]] = True
            first[i] = True
    return first


@numba.njit(cache=True)
def _previous_times(slot, time, last_time):  # pragma: no cover - compiled
    """Each row's previous time of its slot: the row before it, or the state's last time."""
    last = last_time.copy()
    prev = np.empty(len(slot), dtype=np.int64)
    for i in range(len(slot)):
        prev[i] = last[slot[i]]
        last[slot[i]] = time[i]
    return prev


@numba.njit(cache=True)
def _strictly_ordered(slot: np.ndarray, time: np.ndarray) -> bool:  # pragma: no cover - compiled
    """Whether (slot, time) strictly increases: sorted, with no tie of time within a slot
    (one pass that stops at the first row out of order)."""
    for i in range(1, len(slot)):
        if slot[i] < slot[i - 1] or (slot[i] == slot[i - 1] and time[i] <= time[i - 1]):
            return False
    return True


# The built-in framings' kernels live in this module on purpose: numba's disk cache of the loop
# below does not notice changes in other modules, so a kernel elsewhere could be served stale.
@numba.njit(cache=True)
def boundary_kernel(state, params, value, time):  # pragma: no cover - compiled
    """Boundary frames: a row in another band ``floor(value / x)`` starts a frame."""
    band = np.floor(value / params[0])
    same = band == state[0]
    state[0] = band
    return 2 if same else 3


@numba.njit(cache=True)
def delta_kernel(state, params, value, time):  # pragma: no cover - compiled
    """Delta frames: continue while ``max - min < x``; otherwise start afresh."""
    lo = min(state[0], value)
    hi = max(state[1], value)
    if state[0] == state[0] and hi - lo < params[0]:
        state[0] = lo
        state[1] = hi
        return 2
    state[0] = value
    state[1] = value
    return 3


@numba.njit(cache=True)
def _aggregate_of(func, count, total, lo, hi):  # pragma: no cover - compiled
    if func == 0:
        return count
    if func == 1:
        return total
    if func == 2:
        return total / count
    if func == 3:
        return lo
    return hi


@numba.njit(cache=True)
def _holds(op, a, x):  # pragma: no cover - compiled
    if op == 0:
        return a < x
    if op == 1:
        return a <= x
    if op == 2:
        return a > x
    return a >= x


@numba.njit(cache=True)
def aggregate_kernel(state, params, value, time):  # pragma: no cover - compiled
    """Aggregate frames; state: count, sum, min, max; params: function, comparison, x."""
    func, op, x = int(params[0]), int(params[1]), params[2]
    count, total = state[0] + 1, state[1] + value
    lo, hi = min(state[2], value), max(state[3], value)
    if op >= 2:  # minimal: add the row, report whether the frame now satisfies
        state[0], state[1], state[2], state[3] = count, total, lo, hi
        return 6 if _holds(op, _aggregate_of(func, count, total, lo, hi), x) else 2
    if _holds(op, _aggregate_of(func, count, total, lo, hi), x):
        state[0], state[1], state[2], state[3] = count, total, lo, hi
        return 2
    if _holds(op, _aggregate_of(func, 1.0, value, value, value), x):
        state[0], state[1], state[2], state[3] = 1.0, value, value, value
        return 3
    state[0], state[1], state[2], state[3] = 0.0, 0.0, np.inf, -np.inf
    return 1


@numba.njit(cache=True)
def increasing_kernel(state, params, value, time):  # pragma: no cover - compiled
    """Appendix B's F3: continue while the value rises (False against the initial NaN)."""
    rising = value > state[0]
    state[0] = value
    return 2 if rising else 3


@numba.njit(cache=True)
def threshold_kernel(state, params, value, time):  # pragma: no cover - compiled
    """Threshold frames over predicate codes: a row that holds (> 0) joins, others skip."""
    return 2 if value > 0 else 1


@numba.njit(cache=True)
def decide_builtin(kind, state, params, value, time):  # pragma: no cover - compiled
    """The decision of built-in framing ``kind`` (``BOUNDARY``, ``DELTA``, ...)."""
    if kind == 0:
        return boundary_kernel(state, params, value, time)
    if kind == 1:
        return delta_kernel(state, params, value, time)
    if kind == 2:
        return aggregate_kernel(state, params, value, time)
    if kind == 3:
        return increasing_kernel(state, params, value, time)
    return threshold_kernel(state, params, value, time)


@numba.njit(cache=True)
def frame_id_of(start, next_id):  # pragma: no cover - compiled
    """A new frame's ``frame_id``: the time of its first row, or ``next_id`` (one past the
    key's last id) if that is larger (frames of a key starting at one instant). -1 marks "no
    id yet" in state bytes, so a frame whose id would be -1 (starting 1 µs before 1970) takes
    0; ids still increase per key, so none repeats.

    Examples
    --------
    >>> frame_id_of(30, np.iinfo(np.int64).min), frame_id_of(30, 31), frame_id_of(-1, -9)
    (30, 31, 0)
    """
    fid = max(start, next_id)
    return 0 if fid == -1 else fid


@numba.njit(cache=True)
def _emit(o_kind, o_slot, o_id, o_start, o_before, o_end, o_last, o_n, o_miss, m, kind, s,
          fid, start, before, end, last, n, miss):  # pragma: no cover - compiled
    o_kind[m] = kind
    o_slot[m] = s
    o_id[m] = fid
    o_start[m] = start
    o_before[m] = before
    o_end[m] = end
    o_last[m] = last
    o_n[m] = n
    o_miss[m] = miss
    return m + 1


def _loop_impl(kind, params, i0, slot, time, value, pre_m, period, miss_break, minimal,
                min_rows, min_amount, frag_kind, frag_amount,
                last_time, status, f_start, f_last, f_before, f_n, f_miss, pend_n, pend_end,
                frame_id, anchor, k_done, next_id, fstate, initial,
                o_kind, o_slot, o_id, o_start, o_before, o_end, o_last, o_n, o_miss):
    # pragma: no cover - compiled (and run as plain Python for framings without a kernel)
    """Rows ``i0..`` through the framing; stops early when the output buffer is nearly full.

    Returns ``(next row, outputs written)``. Output kind 0 is a partial row, 1 a final row.
    """
    n = len(time)
    cap = len(o_kind)
    m = 0
    for i in range(i0, n):
        if cap - m < 3:
            return i, m
        s = slot[i]
        t = time[i]
        prev = last_time[s]
        before = prev
        if pre_m[i] > 0:  # absent reports, first at prev + period
            t_miss = prev + period
            before = prev + pre_m[i] * period
            if status[s] == 2:
                m = _emit(o_kind, o_slot, o_id, o_start, o_before, o_end, o_last, o_n, o_miss,
                          m, 1, s, frame_id[s], f_start[s], f_before[s], t_miss, f_last[s],
                          f_n[s], f_miss[s])
                status[s] = 0
                frame_id[s] = -1
            elif status[s] == 1:
                if miss_break:
                    if not minimal and frame_id[s] != -1:
                        m = _emit(o_kind, o_slot, o_id, o_start, o_before, o_end, o_last, o_n,
                                  o_miss, m, 1, s, frame_id[s], f_start[s], f_before[s],
                                  t_miss, f_last[s], f_n[s], f_miss[s])
                    status[s] = 0
                    frame_id[s] = -1
                else:
                    if pend_n[s] == 0:
                        pend_end[s] = t_miss
                    pend_n[s] += pre_m[i]
            if miss_break:
                fstate[s, :] = initial
        v = value[i]
        last_time[s] = t
        if not np.isfinite(v):  # a missing row: the same as an absent report
            if status[s] == 2:
                m = _emit(o_kind, o_slot, o_id, o_start, o_before, o_end, o_last, o_n, o_miss,
                          m, 1, s, frame_id[s], f_start[s], f_before[s], t, f_last[s],
                          f_n[s], f_miss[s])
                status[s] = 0
                frame_id[s] = -1
            elif status[s] == 1:
                if miss_break:
                    if not minimal and frame_id[s] != -1:
                        m = _emit(o_kind, o_slot, o_id, o_start, o_before, o_end, o_last, o_n,
                                  o_miss, m, 1, s, frame_id[s], f_start[s], f_before[s], t,
                                  f_last[s], f_n[s], f_miss[s])
                    status[s] = 0
                    frame_id[s] = -1
                else:
                    if pend_n[s] == 0:
                        pend_end[s] = t
                    pend_n[s] += 1
            if miss_break:
                fstate[s, :] = initial
            continue
        if status[s] == 2:  # a complete minimal frame learns its end
            m = _emit(o_kind, o_slot, o_id, o_start, o_before, o_end, o_last, o_n, o_miss, m,
                      1, s, frame_id[s], f_start[s], f_before[s], t, f_last[s], f_n[s],
                      f_miss[s])
            status[s] = 0
            frame_id[s] = -1
        action = _decide(kind, fstate[s], params, v, t)
        joins = (action & 2) != 0
        breaks = (action & 1) != 0 or not joins
        if breaks and status[s] == 1:
            end = pend_end[s] if pend_n[s] > 0 else t
            if not minimal and frame_id[s] != -1:
                m = _emit(o_kind, o_slot, o_id, o_start, o_before, o_end, o_last, o_n, o_miss,
                          m, 1, s, frame_id[s], f_start[s], f_before[s], end, f_last[s],
                          f_n[s], f_miss[s])
            status[s] = 0
            frame_id[s] = -1
        pend_n_s = pend_n[s]
        pend_n[s] = 0
        pend_end[s] = np.iinfo(np.int64).min
        if not joins:
            continue
        if status[s] == 0:
            status[s] = 1
            f_start[s] = t
            f_before[s] = before
            f_n[s] = 1
            f_miss[s] = 0
            k_done[s] = -1
        else:
            f_n[s] += pend_n_s + 1
            f_miss[s] += pend_n_s
        f_last[s] = t
        size = f_n[s] if min_rows else t - f_start[s]
        long_enough = size >= min_amount
        if minimal:
            if (action & 4) != 0 and long_enough:
                frame_id[s] = frame_id_of(f_start[s], next_id[s])
                next_id[s] = frame_id[s] + 1
                status[s] = 2
                fstate[s, :] = initial
            continue
        if frame_id[s] == -1 and long_enough:
            frame_id[s] = frame_id_of(f_start[s], next_id[s])
            next_id[s] = frame_id[s] + 1
            if frag_kind == 1:
                anchor[s] = f_n[s]
            elif frag_kind == 2:
                anchor[s] = t
        if frag_kind != 0 and frame_id[s] != -1:
            measure = f_n[s] if frag_kind == 1 else t
            k = (measure - anchor[s]) // frag_amount
            if k > k_done[s]:
                m = _emit(o_kind, o_slot, o_id, o_start, o_before, o_end, o_last, o_n, o_miss,
                          m, 0, s, frame_id[s], f_start[s], f_before[s], 0, t, f_n[s],
                          f_miss[s])
                k_done[s] = k
    return n, m


_decide = decide_builtin
# Built-in framings: one compiled loop, cached on disk (the decision is chosen by `kind`).
_frame_loop = numba.njit(cache=True)(_loop_impl)


def _py_decide(kind, state, framing, value, time):  # noqa: ANN001, ANN202 - the slow path
    return int(framing.decide(state, value, time))


# Framings without a kernel: the same loop as plain Python, `params` being the framing itself.
_frame_loop_py = types.FunctionType(
    _loop_impl.__code__, {**globals(), "_decide": _py_decide, "_emit": _emit.py_func},
    "_frame_loop_py")
_USER_LOOPS: dict = {}


def _kernel_of(framing: Any) -> Any:
    """A framing's numba kernel as its class holds it: read through the instance, a numba
    dispatcher binds to it (a method bound to each framing object), which made the loop
    around it compile anew, seconds each time, for every framing built."""
    kernel = inspect.getattr_static(framing, "kernel", None)
    return kernel.__func__ if isinstance(kernel, staticmethod) else kernel


def _user_loop(kernel: Any) -> Any:
    """A compiled loop around a user's numba kernel (compiled once per process)."""
    if kernel not in _USER_LOOPS:
        @numba.njit
        def adapter(kind, state, params, value, time):  # pragma: no cover - compiled
            return kernel(state, params, value, time)

        namespace = {**globals(), "_decide": adapter}
        _USER_LOOPS[kernel] = numba.njit(types.FunctionType(_loop_impl.__code__, namespace,
                                                            "_frame_loop_user"))
    return _USER_LOOPS[kernel]
