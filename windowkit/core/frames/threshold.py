"""Threshold frames: maximal periods where a predicate holds (NiagaraST's frame operator).

Threshold frames are one framing of the shared engine (``windowkit.core.frames._engine``):
:class:`ThresholdFraming` joins a row to the frame while the predicate holds and leaves every
other row out of frames; :class:`ThresholdFramer` runs it over predicate values. Everything
else (keys, ties, missing values, schedule, fragments, watermark, extent) is the engine's,
shared with every other framing.

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
  ``frame_id`` (the time of its first row) and, with ``fragment_every``, a ``partial`` row; then
  another partial at the first satisfying row past each further multiple of
  ``fragment_every``, and one ``final`` row when it closes. Since every row is placed by the
  data alone, the output does not depend on how the stream is cut into batches.
* A frame closes on the first separator after ``last`` (with missing values bridged, on the
  first 0), or, with ``missing="unsatisfied"`` and a schedule, when the watermark shows the next
  report is absent: no row can arrive before ``last + ceil(1.5 P)`` (see
  :meth:`~windowkit.core.frames._engine.SequenceFramer.advance`).
* Rows of one key at one time (the paper assumes none): all are reports, taken unsatisfied,
  missing, satisfying whatever their arrival order (``duplicates="keep"``), or one report that
  holds if any (``"any"``) or all (``"all"``) of them hold, missing if none decides.
* ``extent="liberal"`` (appendix F) moves ``start`` back to the report before the frame's
  first row: the last report that did not satisfy the predicate (the freezer example).

State bytes (format ``THRFRAME``, version 1) hold the spec and one row per key of the table
:meth:`ThresholdFramer.key_state` gives, the table a streaming checkpoint stores in chunks;
it is converted to and from the engine's per-key state.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from windowkit.core.durations import Duration
from windowkit.core.frames._engine import (
    _INT_FIELDS,
    _NONE,
    _OPEN,
    VALUE,
    SequenceFramer,
    SequenceFrameSpec,
    _KeyStates,
)
from windowkit.core.frames.framing import (
    CONTINUE,
    SKIP,
    THRESHOLD,
    DuplicatePolicy,
    Extent,
    Framing,
    MissingPolicy,
)
from windowkit.core.registry import register
from windowkit.core.serialization import pack_state, state_decoder, unpack_state

# The per-key table of a threshold framer (its state bytes and chunks): the engine's fields,
# with whether a frame is open and its satisfying rows in place of the engine's status and
# missing count; ``f_before`` only with a liberal extent, the one option that reads it.
_TABLE = {"last_time": np.int64, "open": np.bool_, "f_start": np.int64, "f_last": np.int64,
          "f_n": np.int64, "f_ones": np.int64, "pend_n": np.int64, "pend_end": np.int64,
          "frame_id": np.int64, "anchor": np.int64, "k_done": np.int64, "next_id": np.int64}
_SHARED = [name for name in _TABLE if name in _INT_FIELDS]
_CODE_VALUES = np.array([np.nan, 0.0, 1.0])  # predicate code + 1 -> the framing's value


@register("ThresholdFraming")
class ThresholdFraming(Framing):
    """The decision of threshold frames: a row joins the frame while the predicate holds.

    The values are truth values: above 0 the predicate holds, 0 (or below) it does not, NaN it
    is missing. A row that holds joins the frame; any other row is in no frame. Run by
    :class:`ThresholdFramer` (which takes predicate values), or by
    :class:`~windowkit.core.frames.CustomFramer` on values already coded so.

    Examples
    --------
    >>> from windowkit.core.frames import CustomFramer
    >>> temps = np.array([30, 31, 33, 34, 30, 34, 33, 34, 35, 32])
    >>> framer = CustomFramer(ThresholdFraming(), extent="liberal")
    >>> out = framer.update(np.arange(1, 11), (temps > 32).astype(float))
    >>> out[["start", "last", "end"]].values.tolist()
    [[2, 4, 5], [5, 9, 10]]
    """

    span = "maximal"
    state_size = 1
    builtin_kind = THRESHOLD
    truth_valued = True

    def decide(self, state: np.ndarray, value: float, time: int) -> int:
        """Join while the predicate holds; skip the row otherwise.

        Examples
        --------
        >>> ThresholdFraming().decide(np.zeros(1), 0.0, 0) == SKIP
        True
        """
        return CONTINUE if value > 0 else SKIP


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
        if arr.dtype == np.bool_:
            return arr.astype(np.int8)
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


def predicate_values(values: np.ndarray | pd.Series | list) -> np.ndarray:
    """Predicate values as :class:`ThresholdFraming` reads them: 1.0, 0.0, NaN for missing.

    Examples
    --------
    >>> predicate_values([True, False, None]).tolist()
    [1.0, 0.0, nan]
    """
    return _CODE_VALUES[predicate_codes(values) + 1]


@register()
class ThresholdFramer(SequenceFramer):
    """Incremental framing function (Definition 5) for threshold frames over many keys.

    See the module docstring for the exact semantics: the engine runs
    :class:`ThresholdFraming` in compiled code, one pass over the batch, with a handful of
    integers of state per key.

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
    duplicates : {"keep", "any", "all"}
        Rows of one key at one time: all are reports, ordered unsatisfied, missing, satisfying
        whatever their arrival order (``"keep"``), or one report holding if any / all of them
        hold.
    extent : {"conservative", "liberal"}
        ``start`` is the frame's first satisfying row, or the last report before it.

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

    @property
    def input_schema(self) -> list[tuple[str, str]]:
        """``value``: the predicate's code (1 holds, 0 does not, -1 missing).

        Examples
        --------
        >>> ThresholdFramer().input_schema
        [('value', 'code')]
        """
        return [(VALUE, "code")]

    def __init__(
        self,
        min_duration: str | int | Duration = "1 rows",
        missing: MissingPolicy = "unsatisfied",
        schedule: str | int | None = None,
        fragment_every: str | int | Duration | None = None,
        duplicates: DuplicatePolicy = "keep",
        extent: Extent = "conservative",
        *,
        spec: SequenceFrameSpec | None = None,
    ) -> None:
        spec = spec or SequenceFrameSpec.create(min_duration, missing, schedule, fragment_every,
                                                extent, duplicates)
        super().__init__(ThresholdFraming(), spec)

    def update(self, time: np.ndarray, value: np.ndarray | pd.Series | list,
               key: Any = None) -> pd.DataFrame:
        """Consume one batch: event times (int64 µs), predicate values and keys.

        Within the batch, rows may come in any order: each key's rows are taken in time order
        (ties as ``duplicates`` says). Across batches a key's time must not go backwards.

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
        return self._frame(time, predicate_values(value), key)

    # ------------------------------------------------------------------ per-key parts
    def key_state(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The keys held, in slot order, and their state table (see the module docstring).

        Examples
        --------
        >>> f = ThresholdFramer("1 rows")
        >>> _ = f.update(np.array([1, 2]), [True, False], key=np.array(["b", "a"]))
        >>> keys, arrays = f.key_state()
        >>> keys.tolist(), arrays["open"].tolist()
        (['b', 'a'], [True, False])
        """
        keys, ints, _ = self._live()
        table = {name: ints[name] for name in _SHARED}
        table["open"] = ints["status"] == _OPEN
        table["f_ones"] = ints["f_n"] - ints["f_miss"]
        if self.spec.extent == "liberal":
            table["f_before"] = ints["f_before"]
        return keys, {name: table[name] for name in self._table_fields()}

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
        fields = self._table_fields()
        if set(arrays) != set(fields) or any(len(a) != len(keys) for a in arrays.values()):
            msg = (f"ThresholdFramer key state: fields {sorted(arrays)} of lengths "
                   f"{sorted({len(a) for a in arrays.values()})} for {len(keys)} keys; "
                   f"expected {sorted(fields)}")
            raise ValueError(msg)
        ints = {name: np.array(arrays[name], dtype=np.int64) for name in _SHARED}
        ints["status"] = np.where(np.asarray(arrays["open"], dtype=bool), _OPEN, 0)
        ints["f_miss"] = ints["f_n"] - np.asarray(arrays["f_ones"], dtype=np.int64)
        before = arrays.get("f_before")
        ints["f_before"] = (np.full(len(keys), _NONE, dtype=np.int64) if before is None
                            else np.array(before, dtype=np.int64))
        state = _KeyStates(self._state.initial, keys)
        state.ints = {name: ints[name].astype(np.int64, copy=False) for name in _INT_FIELDS}
        # the framing's own state is unused: a threshold decision reads the row alone
        state.fstate = np.tile(state.initial, (len(keys), 1))
        self._state = state

    def _table_fields(self) -> list[str]:
        return [*_TABLE, *(["f_before"] if self.spec.extent == "liberal" else [])]

    # ------------------------------------------------------------------ serialization
    def to_bytes(self) -> bytes:
        """Serialize parameters and the per-key table.

        Examples
        --------
        >>> f = ThresholdFramer("3 rows", schedule="30 seconds")
        >>> _ = f.update(np.array([0, 30_000_000]), [True, True], key=np.array(["r1", "r1"]))
        >>> g = ThresholdFramer.from_bytes(f.to_bytes())
        >>> g.spec == f.spec, g.n_keys, g.open_frames
        (True, 1, 1)
        """
        spec = self.spec
        frag = spec.fragment_every
        meta: dict[str, Any] = {
            "min_duration": [spec.min_duration.kind, spec.min_duration.amount],
            "missing": spec.missing,
            "schedule": spec.schedule,
            "fragment_every": None if frag is None else [frag.kind, frag.amount],
            "duplicates": spec.duplicates,
        }
        if spec.extent != "conservative":  # a conservative spec keeps the v1 meta exactly
            meta["extent"] = spec.extent
        keys, arrays = self.key_state()
        meta["integer_keys"] = bool(keys.dtype == np.int64 or not len(keys))
        return pack_state(self.FORMAT_TAG, self.FORMAT_VERSION, meta, {**arrays, "keys": keys})

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
        framer = cls(spec=SequenceFrameSpec.from_meta(meta))
        keys = arrays.pop("keys")
        framer.load_key_state(keys, arrays)
        return framer
