"""``WindowWidening``: progressive window widening (PWW) as a :class:`StreamOperator`.

Semantics (the paper's, as read below; the brute-force oracle ``windowkit.reference.widening``
is written from the same reading):

* Per key, level ``k`` cuts the key's rows into batches ``[b d_k, (b+1) d_k)``, ``d_k = d0 2**k``,
  and a level-k window is two consecutive batches ``[b d_k, (b+2) d_k)`` (half overlap: Lemma 1).
* A level-(k+1) batch is two level-k batches; above ``2 L`` rows only its first and last ``L``
  rows are kept (Algorithm 2). Equivalently, a level-k batch (k >= 1) holds the first and the last
  ``L`` of the key's rows in its interval. Level-0 batches are whole; with ``base_chunks`` a
  level-0 window over ``4 L`` rows is given to the detector in pieces of ``4 L`` rows every
  ``2 L`` rows. So no window given to the detector exceeds ``4 L`` rows, and every run of at most
  ``L`` consecutive rows of a key lasting at most ``d_K`` lies wholly in one (Theorem 1).
* The detector runs on each window holding at least one row as soon as the window is closed:
  when a row at or after its end has been processed, or the watermark reached ``end - 1``, or
  at :meth:`~WindowWidening.finish`. With ``report="first"`` a window whose rows are exactly
  those of a lower-level window already run (no truncation, rows within one lower window) is not
  run again: it would find the same matches.
* A key's rows with equal times are ordered by their encoded content (the detector's int64
  columns, compared in order), so arrival order never matters; a row's identity is
  ``(key, time, ordinal)``, the ordinal counting the key's rows with the same time before it in
  that order. (Rows at the latest time seen wait until a later time or the watermark passes
  it, since more rows at that time may come.) A match's identity is its rows' identities in
  the detector's order. With ``report="first"`` a match is reported once, by the first window
  that finds it in the order (window end, level, window start, piece); ``"all"`` reports it in
  every window.
* Output, one row per detection: ``key``, ``level``, ``window_start``, ``window_end``,
  ``detected_at`` (= ``window_end``, the event time at which the window closed), ``first_time``,
  ``last_time``, ``span`` (``last_time - first_time``, µs), ``times`` and ``ordinals`` (the
  matched rows' times and ordinals, comma-separated, in the detector's order).

Since which windows exist and what they hold depends on the rows alone, the detections do not
depend on how the stream is cut into batches.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pandas as pd

from windowkit.core.key_index import KeyIndex
from windowkit.core.operator import KEY, TIME, StreamOperator
from windowkit.core.ordering import factorize_keys
from windowkit.core.registry import register
from windowkit.core.serialization import StateFormatError, pack_state, unpack_state
from windowkit.core.widening.config import ReportMode, WideningConfig
from windowkit.core.widening.detector import Detector, detector_name, resolve_detector
from windowkit.core.widening.kernel import (
    append_rows,
    close_levels,
    compact_rows,
    merge_by_slot,
    number_rows,
    order_by_slot,
)

OUTPUT_SCHEMA = [
    (KEY, "string"),
    ("level", "int64"),
    ("window_start", "timestamp"),
    ("window_end", "timestamp"),
    ("detected_at", "timestamp"),
    ("first_time", "timestamp"),
    ("last_time", "timestamp"),
    ("span", "int64"),
    ("times", "string"),
    ("ordinals", "string"),
]

_NONE = np.iinfo(np.int64).min
_END_OF_INPUT = 2**62  # beyond every window end of times within +-2**61 µs


@register()
class WindowWidening(StreamOperator):
    """Progressive window widening over many keys: a detector run on windows of doubling size.

    Parameters
    ----------
    detector : Detector
        Run on every window (see :mod:`windowkit.core.widening.detector`).
    base : str, int or timedelta
        Base batch duration ``d0`` (``"1 second"``; an int means µs).
    max_length : int
        ``L``: the most rows of a key a pattern spans.
    max_duration : str, int or timedelta, optional
        ``T``: the longest pattern duration to cover; sets the number of levels.
    levels : int, optional
        The number of levels instead of ``max_duration``.
    report : {"first", "all"}
        Report each match once, at its first detection (default), or in every window.
    base_chunks : bool
        Split level-0 windows above ``4 L`` rows into pieces (see the module docstring).
    config : WideningConfig, optional
        Validated parameters instead of the above.

    Examples
    --------
    The paper's remote shell, in one process (key), its steps spread over 20 seconds:

    >>> from windowkit.core.widening.episode_detector import EpisodeDetector
    >>> rows = pd.DataFrame({
    ...     "key": ["p1"] * 6,
    ...     "time": np.array([0, 3, 7, 12, 13, 20]) * 1_000_000,
    ...     "call": ["accept", "read", "dup", "dup", "dup", "execve"],
    ...     "fd": ["3", "0", "4", "4", "4", None], "exe": [None] * 5 + ["/bin/sh"],
    ...     "ret": ["4", "1", "1", "0", "2", "0"]})
    >>> pww = WindowWidening(EpisodeDetector("remote-shell"), base="4 seconds", max_length=8,
    ...                      max_duration="1 minute")
    >>> out = pd.concat([pww.process(rows), pww.finish()])
    >>> out[["key", "level", "window_start", "window_end", "span"]].values.tolist()
    [['p1', 2, 0, 32000000, 20000000]]
    >>> out["times"].tolist()
    ['0,12000000,7000000,13000000,20000000']
    """

    FORMAT_TAG = "PWWIDEN"
    FORMAT_VERSION = 1

    def __init__(
        self,
        detector: Detector,
        base: str | int | dt.timedelta = "1 second",
        max_length: int = 32,
        max_duration: str | int | dt.timedelta | None = None,
        levels: int | None = None,
        report: ReportMode = "first",
        base_chunks: bool = True,
        *,
        config: WideningConfig | None = None,
    ) -> None:
        if not isinstance(detector, Detector):
            msg = f"`detector` must be a windowkit widening Detector; got {type(detector).__name__}"
            raise ValueError(msg)
        self.config = config or WideningConfig.create(base, max_length, max_duration, levels,
                                                      report, base_chunks)
        self.detector = detector
        self._key_index = KeyIndex()
        self._next_seq = np.zeros(0, dtype=np.int64)
        self._last_time = np.zeros(0, dtype=np.int64)
        self._ties = np.zeros(0, dtype=np.int64)
        width = detector.width
        # the stored rows: ``_store`` holds views of the first rows of ``_buffers``, which
        # keep room for appending without copying every stored row each batch
        self._use_buffers({
            "slot": np.zeros(0, dtype=np.int64), "seq": np.zeros(0, dtype=np.int64),
            "time": np.zeros(0, dtype=np.int64), "ord": np.zeros(0, dtype=np.int64),
            "feat": np.zeros((0, width), dtype=np.int64),
        }, 0)
        levels_n = self.config.levels
        empty_refs = np.zeros(0, dtype=np.int64)
        empty_flags = np.zeros(0, dtype=bool)
        self._pending = [(empty_refs, empty_flags) for _ in range(levels_n)]
        self._held = [(empty_refs, empty_flags) for _ in range(levels_n)]
        self._bound = _NONE  # rows with time < bound are all in
        self._ties_held = (np.zeros(0, np.int64), np.zeros(0, np.int64),
                           np.zeros((0, width), np.int64))
        self._seen: dict[tuple, int] = {}
        self.records_given = np.zeros(levels_n, dtype=np.int64)
        self.windows_run = np.zeros(levels_n, dtype=np.int64)
        self.windows_skipped = 0
        self.max_window_rows = 0
        self.peak_rows_held = 0

    # ------------------------------------------------------------------ contract
    @property
    def output_schema(self) -> list[tuple[str, str]]:
        """Output columns (see the module docstring)."""
        return OUTPUT_SCHEMA

    @property
    def input_schema(self) -> list[tuple[str, str]]:
        """The detector's columns, of its column type.

        Examples
        --------
        >>> from windowkit.core.widening.episode_detector import EpisodeDetector
        >>> WindowWidening(EpisodeDetector("a"), base=10, max_length=4, levels=1).input_schema
        [('call', 'category'), ('ret', 'category')]
        """
        return [(name, self.detector.column_type) for name in self.detector.columns]

    def _use_buffers(self, buffers: dict, rows: int) -> None:
        self._buffers = buffers
        self._store = {name: buf[:rows] for name, buf in buffers.items()}

    @property
    def rows_held(self) -> int:
        """Rows the operator holds now (its memory, in rows)."""
        return len(self._store["time"]) + len(self._ties_held[1])

    def process(self, batch: pd.DataFrame) -> pd.DataFrame:
        """Consume rows sorted by ``time`` (with ``key`` and the detector's columns).

        A row may not be earlier than a row of an earlier batch (that would reopen windows
        already given to the detector); windows that end at or before the batch's last time
        are run at once.

        Examples
        --------
        >>> from windowkit.core.widening.episode_detector import EpisodeDetector
        >>> pww = WindowWidening(EpisodeDetector("a\\nb"), base=10, max_length=4, levels=2)
        >>> pww.process(pd.DataFrame({"key": ["k", "k"], "time": [1, 5],
        ...                           "call": ["a", "b"]})).empty
        True
        >>> pww.process(pd.DataFrame({"key": ["k"], "time": [20], "call": ["c"]}))[
        ...     ["level", "window_start", "window_end", "times"]].values.tolist()
        [[0, -10, 10, '1,5']]
        """
        if not len(batch):
            return self.empty_output()
        time = batch[TIME].to_numpy(dtype=np.int64)
        if np.any(time[1:] < time[:-1]):
            msg = "`time` must be sorted within a batch (rows of a batch in event-time order)"
            raise ValueError(msg)
        if self._bound != _NONE and time[0] < self._bound:
            msg = (f"`time` went backwards: a row at {int(time[0])} after the stream reached "
                   f"{int(self._bound)}; rows must arrive in event-time order")
            raise ValueError(msg)
        keys = batch[KEY] if KEY in batch else pd.Series(np.zeros(len(batch), dtype=np.int64))
        slot = self._slots(keys)
        feat = np.asarray(self.detector.encode(batch), dtype=np.int64)
        if feat.shape != (len(batch), self.detector.width):
            msg = (f"the detector encoded {len(batch)} rows as shape {feat.shape}; expected "
                   f"({len(batch)}, {self.detector.width})")
            raise ValueError(msg)
        tb_slot, tb_time, tb_feat = self._ties_held
        # rows at the latest time wait: more rows at that time may come, and rows of a key at
        # one time are ordered by content once all are in (arrival order must not matter).
        # The waiting rows are at the previous latest time, no later than this batch's rows.
        top = int(time[-1])
        ready = int(np.searchsorted(time, top, side="left"))
        if len(tb_time) and int(tb_time[0]) == top:
            self._ties_held = (np.concatenate([tb_slot, slot]), np.concatenate([tb_time, time]),
                               np.concatenate([tb_feat, feat]))
            pieces = []
        else:
            self._ties_held = (slot[ready:].copy(), time[ready:].copy(), feat[ready:].copy())
            pieces = [(tb_slot, tb_time, tb_feat), (slot[:ready], time[:ready], feat[:ready])]
        if sum(len(p[0]) for p in pieces):
            self._admit(pieces)
        return self._close(top)

    def _admit(self, pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
        """Order rows (pieces of ``(slot, time, feat)``, together sorted by time) by (slot,
        time, content), number them and store them."""
        st = self._store
        base = len(st["time"])
        n_new = sum(len(p[0]) for p in pieces)
        buffers = append_rows(pieces, len(self._keys), self._buffers, base, self._next_seq,
                              self._last_time, self._ties)
        if buffers is None:  # a key has rows at one time: order them by content
            slot, time, feat = (np.concatenate([p[i] for p in pieces]) for i in range(3))
            order = order_by_slot(slot, len(self._keys))
            slot, time, feat = slot[order], time[order], feat[order]
            keys = [feat[:, j] for j in range(feat.shape[1] - 1, -1, -1)]
            order = np.lexsort((*keys, time, slot))
            slot, time, feat = slot[order], time[order], feat[order]
            seq, ordinal = number_rows(slot, time, self._next_seq, self._last_time, self._ties)
            store = {"slot": slot, "seq": seq, "time": time, "ord": ordinal, "feat": feat}
            buffers = {name: np.concatenate([st[name], arr]) for name, arr in store.items()}
        self._use_buffers(buffers, base + n_new)
        store = self._store
        refs = np.arange(base, len(store["time"]), dtype=np.int64)
        merged = merge_by_slot(store["slot"], self._pending[0][0], refs)
        self._pending[0] = (merged, np.zeros(len(merged), dtype=bool))
        self.peak_rows_held = max(self.peak_rows_held, self.rows_held)

    def _flush_ties(self, watermark: int | None) -> None:
        tb_slot, tb_time, tb_feat = self._ties_held
        if len(tb_time) and (watermark is None or int(tb_time[0]) <= watermark):
            self._admit([self._ties_held])
            self._ties_held = (tb_slot[:0], tb_time[:0], tb_feat[:0])

    def advance(self, watermark: int) -> pd.DataFrame:
        """Learn that no row with ``time <= watermark`` will come: run the windows it closes.

        Examples
        --------
        >>> from windowkit.core.widening.episode_detector import EpisodeDetector
        >>> pww = WindowWidening(EpisodeDetector("a\\nb"), base=10, max_length=4, levels=1)
        >>> _ = pww.process(pd.DataFrame({"key": ["k", "k"], "time": [1, 5],
        ...                               "call": ["a", "b"]}))
        >>> pww.next_deadline(), pww.advance(8).empty, len(pww.advance(9))
        (9, True, 1)
        """
        self._flush_ties(int(watermark))
        return self._close(int(watermark) + 1)

    def finish(self) -> pd.DataFrame:
        """End of input: run every remaining window."""
        self._flush_ties(None)
        return self._close(_END_OF_INPUT)

    def next_deadline(self) -> int | None:
        """The smallest watermark that closes a window holding rows, if any.

        Examples
        --------
        >>> from windowkit.core.widening.episode_detector import EpisodeDetector
        >>> pww = WindowWidening(EpisodeDetector("a"), base=10, max_length=4, levels=2)
        >>> pww.next_deadline() is None
        True
        >>> _ = pww.process(pd.DataFrame({"key": ["k"], "time": [25], "call": ["b"]}))
        >>> pww.next_deadline()
        29
        """
        tb_time = self._ties_held[1]
        best = (int(tb_time[0]) // self.config.base + 1) * self.config.base if len(
            tb_time) else None
        times = self._store["time"]
        for k in range(self.config.levels):
            d = self.config.level_duration(k)
            for refs, shift in ((self._pending[k][0], 1), (self._held[k][0], 2)):
                if len(refs):
                    end = (int(np.floor_divide(times[refs].min(), d)) + shift) * d
                    best = end if best is None else min(best, end)
        return None if best is None else best - 1

    @property
    def _keys(self) -> list:
        """The keys in slot order."""
        return self._key_index.keys

    # ------------------------------------------------------------------ rows in
    def _slots(self, keys: pd.Series) -> np.ndarray:
        codes, uniques = factorize_keys(keys)
        held = len(self._key_index)
        slots = self._key_index.slots(uniques)
        grow = len(self._key_index) - held
        if grow:
            self._next_seq = np.concatenate([self._next_seq, np.zeros(grow, np.int64)])
            self._last_time = np.concatenate([self._last_time, np.full(grow, _NONE, np.int64)])
            self._ties = np.concatenate([self._ties, np.zeros(grow, np.int64)])
        return slots[codes]

    # ------------------------------------------------------------------ windows
    def _close(self, bound: int) -> pd.DataFrame:
        if bound <= self._bound:
            return self.empty_output()
        self._bound = bound
        cfg, st = self.config, self._store
        column = self.detector.relevance
        if column is None:
            rel = np.ones(len(st["time"]), dtype=np.int64)
        else:
            rel = np.ascontiguousarray(st["feat"][:, column])
        stats = np.array([self.windows_skipped, self.max_window_rows], dtype=np.int64)
        pending, held, windows = close_levels(
            st["slot"], st["time"], rel, self.detector.required_bits, _joined(self._pending),
            _joined(self._held), bound, cfg.base, cfg.max_length, cfg.report == "first",
            cfg.base_chunks, self.records_given, self.windows_run, stats)
        self.windows_skipped, self.max_window_rows = int(stats[0]), int(stats[1])
        out = self._report(self._detect(*windows))
        pending_refs, held_refs = self._compact(pending[0], held[0])
        self._pending = _split(pending_refs, *pending[1:])
        self._held = _split(held_refs, *held[1:])
        self._prune_seen(bound)
        self._forget_idle_keys()
        return out

    def _detect(self, w_slot, w_level, w_start, w_piece, w_lo, w_hi, given) -> list:
        """Run the detector on the windows ``given[w_lo[i]:w_hi[i]]``; the matches found, as
        (slot, window end, level, window start, piece, times, ordinals)."""
        found: list = []
        if not len(w_lo):
            return found
        st = self._store
        index, matches = self.detector.detect_windows(st["feat"][given], w_lo, w_hi)
        for i, match in zip(index.tolist(), matches, strict=True):
            if not match:
                continue
            a = int(w_lo[i])
            positions = np.asarray(match, dtype=np.int64)
            if positions.min() < 0 or positions.max() >= w_hi[i] - a:
                msg = f"the detector returned positions {match} outside a window of {w_hi[i] - a}"
                raise ValueError(msg)
            rows = given[a + positions]
            start = int(w_start[i])
            level = int(w_level[i])
            found.append((int(w_slot[i]), start + 2 * self.config.level_duration(level), level,
                          start, int(w_piece[i]), st["time"][rows].tolist(),
                          st["ord"][rows].tolist()))
        return found

    def _report(self, found: list) -> pd.DataFrame:
        if not found:
            return self.empty_output()
        found.sort(key=lambda f: f[:5])
        rows = []
        for slot, end, level, start, _piece, times, ords in found:
            if self.config.report == "first":
                identity = (slot, *times, *ords)
                if identity in self._seen:
                    continue
                self._seen[identity] = min(times)
            rows.append((self._keys[slot], level, start, end, end, min(times), max(times),
                         max(times) - min(times), ",".join(map(str, times)),
                         ",".join(map(str, ords))))
        if not rows:
            return self.empty_output()
        columns = list(zip(*rows, strict=True))
        data = {}
        for (name, kind), values in zip(OUTPUT_SCHEMA, columns, strict=True):
            if kind in ("int64", "timestamp"):
                data[name] = np.asarray(values, dtype=np.int64)
            else:  # the dtype pandas infers (e.g. int64 for integer keys)
                data[name] = pd.Series(values)
        return pd.DataFrame(data)

    def _compact(self, pending: np.ndarray,
                 held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Keep only the stored rows some level still needs (referenced by the levels'
        ``pending`` and ``held`` lists); returns the lists renumbered."""
        st = self._store
        mark = np.zeros(len(st["time"]), dtype=bool)
        mark[pending] = True
        mark[held] = True
        live = np.flatnonzero(mark)
        if len(live) == len(st["time"]):
            return pending, held
        remap = np.full(len(st["time"]), -1, dtype=np.int64)
        remap[live] = np.arange(len(live))
        compact_rows(live, st)
        self._store = {name: arr[: len(live)] for name, arr in st.items()}
        return remap[pending], remap[held]

    def _prune_seen(self, bound: int) -> None:
        """Forget matches no later window can hold (every window lasts at most 2 d_K)."""
        if not self._seen:
            return
        reach = 2 * self.config.max_duration
        stale = [m for m, first in self._seen.items() if first + reach <= bound]
        for m in stale:
            del self._seen[m]

    def _forget_idle_keys(self) -> None:
        """Forget the keys that hold no row (stored, or waiting for its time's ties) and no
        reported match, once they are a quarter of the keys held (each forgetting renumbers
        every held key, so it is paid for by the keys that went idle since the last one).

        Such a key's rows have left every window, and the stream is past its last time: its
        next row is numbered, ordered and windowed as a new key's would be, so keeping it
        would only make the state grow with the keys ever seen.
        """
        n_keys = len(self._key_index)
        busy = np.zeros(n_keys, dtype=bool)
        busy[self._store["slot"]] = True
        busy[self._ties_held[0]] = True
        busy[[identity[0] for identity in self._seen]] = True
        n_idle = n_keys - int(busy.sum())
        if not n_idle or 4 * n_idle < n_keys:
            return
        kept = np.flatnonzero(busy)
        renumber = np.full(n_keys, -1, dtype=np.int64)
        renumber[kept] = np.arange(len(kept))
        keys = self._keys
        self._key_index = KeyIndex([keys[s] for s in kept.tolist()])
        self._next_seq, self._last_time, self._ties = (
            self._next_seq[kept], self._last_time[kept], self._ties[kept])
        self._store["slot"][:] = renumber[self._store["slot"]]  # a view of the buffer
        self._ties_held = (renumber[self._ties_held[0]], *self._ties_held[1:])
        self._seen = {(int(renumber[m[0]]), *m[1:]): first for m, first in self._seen.items()}

    # ------------------------------------------------------------------ state
    def to_bytes(self) -> bytes:
        """Serialize parameters, detector spec and state.

        Examples
        --------
        >>> from windowkit.core.widening.episode_detector import EpisodeDetector
        >>> pww = WindowWidening(EpisodeDetector("a\\nb"), base=10, max_length=4, levels=2)
        >>> _ = pww.process(pd.DataFrame({"key": [7], "time": [3], "call": ["a"]}))
        >>> copy = WindowWidening.from_bytes(pww.to_bytes())
        >>> copy.config == pww.config, copy.rows_held, copy.detector.text
        (True, 1, 'a\\nb')
        """
        cfg = self.config
        integer_keys = all(isinstance(k, (int, np.integer)) and not isinstance(k, bool)
                           for k in self._keys)
        seen = list(self._seen.items())
        meta: dict[str, Any] = {
            "base": cfg.base, "max_length": cfg.max_length, "levels": cfg.levels,
            "report": cfg.report, "base_chunks": cfg.base_chunks,
            "detector": detector_name(self.detector), "spec": self.detector.to_spec(),
            "bound": int(self._bound), "integer_keys": integer_keys,
            "pending": [len(r) for r, _ in self._pending],
            "held": [len(r) for r, _ in self._held],
            "seen_sizes": [(len(m) - 1) // 2 for m, _ in seen],
            "windows_skipped": self.windows_skipped, "max_window_rows": self.max_window_rows,
            "peak_rows_held": self.peak_rows_held,
        }
        keys = np.asarray(self._keys, dtype=object)
        arrays = {
            "keys": keys.astype(np.int64) if integer_keys and len(keys) else keys.astype(str),
            "next_seq": self._next_seq, "last_time": self._last_time, "ties": self._ties,
            **{f"store_{name}": arr for name, arr in self._store.items()},
            "pending_refs": np.concatenate([r for r, _ in self._pending]),
            "pending_part": np.concatenate([f for _, f in self._pending]),
            "held_refs": np.concatenate([r for r, _ in self._held]),
            "held_part": np.concatenate([f for _, f in self._held]),
            "seen_flat": np.asarray([v for m, _ in seen for v in m], dtype=np.int64),
            "seen_first": np.asarray([f for _, f in seen], dtype=np.int64),
            "records_given": self.records_given, "windows_run": self.windows_run,
            "ties_slot": self._ties_held[0], "ties_time": self._ties_held[1],
            "ties_feat": self._ties_held[2],
        }
        return pack_state(self.FORMAT_TAG, self.FORMAT_VERSION, meta, arrays)

    @classmethod
    def from_bytes(cls, blob: bytes) -> WindowWidening:
        """Rebuild an operator from :meth:`to_bytes` output; corrupt bytes raise
        :class:`~windowkit.core.serialization.StateFormatError`.

        Examples
        --------
        >>> WindowWidening.from_bytes(b"garbage")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        windowkit.core.serialization.StateFormatError: WindowWidening state: state bytes are ...
        """
        try:
            meta, arrays = unpack_state(blob, cls.FORMAT_TAG, cls.FORMAT_VERSION)
            return cls._rebuild(meta, arrays)
        except StateFormatError as exc:
            if cls.__name__ in str(exc):
                raise
            msg = f"{cls.__name__} state: {exc}"
            raise StateFormatError(msg) from exc
        except Exception as exc:  # any failure to decode, whatever raised it
            msg = f"{cls.__name__} state is corrupt: {type(exc).__name__}: {exc}"
            raise StateFormatError(msg) from exc

    @classmethod
    def _rebuild(cls, meta: dict, arrays: dict) -> WindowWidening:
        config = WideningConfig(base=meta["base"], max_length=meta["max_length"],
                                levels=meta["levels"], report=meta["report"],
                                base_chunks=meta["base_chunks"])
        op = cls(resolve_detector(meta["detector"], meta["spec"]), config=config)
        op._key_index = KeyIndex(arrays["keys"])
        n_keys = len(op._key_index)
        for name in ("next_seq", "last_time", "ties"):
            arr = arrays[name].astype(np.int64)
            if len(arr) != n_keys:
                msg = f"array {name!r} has {len(arr)} entries for {n_keys} keys"
                raise ValueError(msg)
            setattr(op, f"_{name}", arr)
        n_rows = len(arrays["store_time"])
        for name in ("slot", "seq", "time", "ord"):
            arr = arrays[f"store_{name}"].astype(np.int64)
            if len(arr) != n_rows:
                msg = f"stored column {name!r} has {len(arr)} rows, not {n_rows}"
                raise ValueError(msg)
            op._store[name] = arr
        feat = arrays["store_feat"].astype(np.int64)
        if feat.shape != (n_rows, op.detector.width):
            msg = f"stored features have shape {feat.shape}, not ({n_rows}, {op.detector.width})"
            raise ValueError(msg)
        op._store["feat"] = feat
        if n_rows and (op._store["slot"].min() < 0 or op._store["slot"].max() >= n_keys):
            msg = "stored rows name key slots out of range"
            raise ValueError(msg)
        op._use_buffers(dict(op._store), n_rows)
        op._pending = _split_levels(arrays["pending_refs"], arrays["pending_part"],
                                    meta["pending"], config.levels, n_rows)
        op._held = _split_levels(arrays["held_refs"], arrays["held_part"], meta["held"],
                                 config.levels, n_rows)
        op._bound = int(meta["bound"])
        ties = tuple(arrays[f"ties_{n}"].astype(np.int64) for n in ("slot", "time", "feat"))
        if not (len(ties[0]) == len(ties[1]) == len(ties[2])) or ties[2].shape[1:] != (
                op.detector.width,) or (len(ties[0]) and (ties[0].min() < 0
                                                           or ties[0].max() >= n_keys)):
            msg = "the rows waiting for equal times do not add up"
            raise ValueError(msg)
        op._ties_held = ties
        flat = arrays["seen_flat"].tolist()
        firsts = arrays["seen_first"].tolist()
        sizes = [int(s) for s in meta["seen_sizes"]]
        if len(sizes) != len(firsts) or sum(1 + 2 * s for s in sizes) != len(flat):
            msg = "the reported-match table does not add up"
            raise ValueError(msg)
        at = 0
        for size, first in zip(sizes, firsts, strict=True):
            op._seen[tuple(flat[at: at + 1 + 2 * size])] = first
            at += 1 + 2 * size
        op.records_given = arrays["records_given"].astype(np.int64)
        op.windows_run = arrays["windows_run"].astype(np.int64)
        if len(op.records_given) != config.levels or len(op.windows_run) != config.levels:
            msg = "per-level counters do not match the number of levels"
            raise ValueError(msg)
        op.windows_skipped = int(meta["windows_skipped"])
        op.max_window_rows = int(meta["max_window_rows"])
        op.peak_rows_held = int(meta["peak_rows_held"])
        return op


def _split_levels(refs: np.ndarray, part: np.ndarray, sizes: list, levels: int,
                  n_rows: int) -> list[tuple[np.ndarray, np.ndarray]]:
    sizes = [int(s) for s in sizes]
    refs = refs.astype(np.int64)
    part = part.astype(bool)
    if len(sizes) != levels or sum(sizes) != len(refs) or len(part) != len(refs):
        msg = "per-level row lists do not add up"
        raise ValueError(msg)
    if len(refs) and (refs.min() < 0 or refs.max() >= n_rows):
        msg = "per-level row lists point outside the stored rows"
        raise ValueError(msg)
    bounds = np.cumsum([0, *sizes])
    return [(refs[a:b], part[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _joined(lists: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, ...]:
    """Per-level (refs, flags) lists as one (refs, flags, offsets) triple."""
    sizes = [len(r) for r, _ in lists]
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(sizes)
    refs = np.concatenate([r for r, _ in lists]).astype(np.int64, copy=False)
    return refs, np.concatenate([f for _, f in lists]), offsets


def _split(refs: np.ndarray, part: np.ndarray,
           offsets: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The inverse of :func:`_joined`."""
    bounds = offsets.tolist()
    return [(refs[a:b], part[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
