"""What the exact algorithm and both sketches share: item handling, slot order and lateness.

Rows are ``(item, slot)`` pairs. Items are integers (any numpy integer dtype) or strings; the
first non-empty batch fixes which. Slots must not go back by more than ``allowed_lateness``
behind the latest slot seen (``now``). Rows of slots ``> now - allowed_lateness`` wait in a
small buffer of distinct pairs; everything at or before that frontier is applied in slot order.
Since rows of one slot commute (a duplicate within a slot never changes the state), the state
after any split of a stream into batches is the state after the stream sorted by slot.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from windowkit.core.hashing import hash64, splitmix64
from windowkit.core.persistence import _kernels as K
from windowkit.core.serialization import pack_state, state_decoder, unpack_state


def normalize_items(items: Any) -> tuple[np.ndarray, str]:
    """Items as an int64 or object array, and their kind (``"int"`` or ``"str"``)."""
    arr = items.to_numpy() if isinstance(items, (pd.Series, pd.Index)) else np.asarray(items)
    if arr.ndim != 1:
        msg = f"`items` must be one-dimensional; got shape {arr.shape}"
        raise ValueError(msg)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False), "int"
    if arr.dtype.kind in "USO":
        out = arr.astype(object) if arr.dtype.kind != "O" else arr
        if out.size and not all(isinstance(v, str) for v in out[:1]):
            msg = f"`items` must be integers or strings; got {type(out[0]).__name__}"
            raise ValueError(msg)
        return out, "str"
    if arr.size == 0:
        return arr.astype(np.int64), "int"
    msg = f"`items` must be integers or strings; got dtype {arr.dtype}"
    raise ValueError(msg)


def normalize_slots(slots: Any, size: int) -> np.ndarray:
    """Slots as an int64 array of length ``size``."""
    arr = slots.to_numpy() if isinstance(slots, (pd.Series, pd.Index)) else np.asarray(slots)
    if arr.ndim != 1 or arr.size != size:
        msg = f"`items` and `slots` must have the same length; got {size} and {arr.size}"
        raise ValueError(msg)
    if arr.size and arr.dtype.kind not in "iu":
        msg = f"`slots` must be integers; got dtype {arr.dtype}"
        raise ValueError(msg)
    return arr.astype(np.int64, copy=False)


class SlotStream:
    """Base of the persistence objects (not public).

    Subclasses set ``FORMAT_TAG``, ``CONFIG`` and implement ``_make_cores``, ``_apply``,
    ``_after_now`` and the canonical per-core export ``_core_arrays`` / ``_load_cores``.
    """

    FORMAT_TAG = ""
    FORMAT_VERSION = 1
    CONFIG: type = object

    def __init__(self, config: Any) -> None:
        self.config = config
        self._kind: str | None = None
        self._now: int | None = None
        self._cores: list | None = None
        self._pend_items = np.empty(0, dtype=np.int64)
        self._pend_slots = np.empty(0, dtype=np.int64)
        self._seed_mix = splitmix64(np.array([config.seed], dtype=np.uint64))[0]

    # -- hooks -------------------------------------------------------------------------------
    def _make_cores(self, kind: str) -> list:
        raise NotImplementedError

    def _check_slots(self, slots: np.ndarray, lo: int, hi: int) -> None:
        """Extra checks on accepted slots, whose least and greatest are ``lo`` and ``hi``."""

    def _after_now(self) -> None:
        """Called after ``now`` moved and ready rows were applied (expiry)."""

    # -- items ---------------------------------------------------------------------------------
    def _hash(self, items: np.ndarray) -> np.ndarray:
        if self._kind == "int":
            return K.hash_int64(items, self._seed_mix)
        return hash64(items, seed=self.config.seed)

    def sample_hash(self, items: Any, slots: Any, instance: int = 0) -> np.ndarray:
        """``h(d, t)`` of instance ``instance`` as uint64 (sampled when ``< tau * 2**64``).

        Deterministic, seeded and process-independent; exposed for tests and oracles.

        Examples
        --------
        >>> from windowkit.core.persistence import PersistentItemsSketch
        >>> sk = PersistentItemsSketch(alpha=0.5, epsilon=0.1, n=10, seed=4)
        >>> a = sk.sample_hash([1, 2], [0, 0]); b = sk.sample_hash([1, 2], [0, 0])
        >>> bool((a == b).all()), a.dtype.name
        (True, 'uint64')
        """
        items_arr, kind = normalize_items(items)
        slots_arr = normalize_slots(slots, items_arr.size)
        if kind == "int":
            hashes = K.hash_int64(items_arr, self._seed_mix)
        else:
            hashes = hash64(items_arr, seed=self.config.seed)
        salt = np.uint64(self.config.salts()[instance])
        return K.sample_values(hashes, slots_arr, salt)

    def _set_kind(self, kind: str) -> None:
        if self._kind is None:
            self._kind = kind
            self._cores = self._make_cores(kind)
        elif kind != self._kind:
            want = "integers" if self._kind == "int" else "strings"
            got = "integers" if kind == "int" else "strings"
            msg = f"`items` must be {want} like the earlier items; got {got}"
            raise ValueError(msg)

    # -- rows ----------------------------------------------------------------------------------
    def update(self, items: Any, slots: Any) -> None:
        """Add rows ``(items[i], slots[i])``; see the class docstring for the order rules."""
        items_arr, kind = normalize_items(items)
        slots_arr = normalize_slots(slots, items_arr.size)
        if not items_arr.size:
            return
        now, lo, hi = self._check_order(slots_arr)
        self._check_slots(slots_arr, lo, hi)
        self._set_kind(kind)
        lateness = self.config.allowed_lateness
        if lateness == 0 and not self._pend_slots.size:
            self._now = now
            self._apply(items_arr, slots_arr)
        else:
            self._pend_items = _concat(self._pend_items, items_arr)
            self._pend_slots = np.concatenate([self._pend_slots, slots_arr])
            self._set_now(now)
            return
        self._after_now()

    def _check_order(self, slots: np.ndarray) -> tuple[int, int, int]:
        """Raise unless no slot is over ``allowed_lateness`` behind an earlier one or ``now``.

        Returns the latest of ``now`` and ``slots`` (the current slot after the batch), and
        the least and greatest of ``slots``.
        """
        lateness = self.config.allowed_lateness
        now = int(slots[0]) if self._now is None else self._now
        i, ref, lo, hi = K.scan_slots(slots, np.int64(now), np.int64(lateness))
        if i >= 0:
            msg = (
                f"`slots` went backwards beyond the allowed lateness ({lateness} slots): "
                f"slot {int(slots[i])} arrived after slot {int(ref)}"
            )
            raise ValueError(msg)
        return int(ref), int(lo), int(hi)

    def _set_now(self, now: int) -> None:
        """Move ``now`` forward and apply every buffered row at or before the frontier."""
        self._now = now if self._now is None else max(self._now, now)
        frontier = self._now - self.config.allowed_lateness
        if self._pend_slots.size:
            ready = self._pend_slots <= frontier
            if ready.any():
                self._apply_sorted(self._pend_items[ready], self._pend_slots[ready])
            self._pend_items, self._pend_slots = self._dedupe(
                self._pend_items[~ready], self._pend_slots[~ready]
            )
        self._after_now()

    def _dedupe(self, items: np.ndarray, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Distinct pairs in (slot, item hash) order: the canonical form of the buffer."""
        if not items.size:
            return items, slots
        keys = self._hash(items)
        order = np.lexsort((keys, slots))
        keys, slots, items = keys[order], slots[order], items[order]
        keep = np.ones(items.size, dtype=bool)
        keep[1:] = (keys[1:] != keys[:-1]) | (slots[1:] != slots[:-1])
        return items[keep], slots[keep]

    def _apply_sorted(self, items: np.ndarray, slots: np.ndarray) -> None:
        order = np.argsort(slots, kind="stable")
        self._apply(items[order], slots[order])

    def _apply(self, items: np.ndarray, slots: np.ndarray) -> None:
        hashes = self._hash(items)
        for core in self._cores or []:
            core.update(hashes, slots, items)

    def _flushed(self) -> SlotStream:
        """This object if nothing is buffered, else a copy with the buffer applied."""
        if not self._pend_slots.size:
            return self
        clone = self.copy()
        clone._apply_sorted(clone._pend_items, clone._pend_slots)
        clone._pend_items = clone._pend_items[:0]
        clone._pend_slots = clone._pend_slots[:0]
        clone._after_now()
        return clone

    # -- common API --------------------------------------------------------------------------------
    @property
    def current_slot(self) -> int | None:
        """The latest slot seen or advanced to (``None`` before any row)."""
        return self._now

    @property
    def buffered_rows(self) -> int:
        """Distinct rows waiting for the lateness horizon to pass."""
        return int(self._pend_slots.size)

    @property
    def num_tuples(self) -> int:
        """Tuples held by the algorithm (summed over instances; buffered rows not counted)."""
        return sum(core.tuples for core in self._cores or [])

    def is_empty(self) -> bool:
        """Whether no row was ever added."""
        return self._now is None

    def memory_bytes(self) -> int:
        """Bytes held by the state's arrays (capacity, not just the used part)."""
        total = self._pend_slots.nbytes + self._pend_items.nbytes
        return total + sum(core.memory_bytes() for core in self._cores or [])

    def copy(self) -> SlotStream:
        """An independent copy (through the canonical bytes)."""
        return type(self).from_bytes(self.to_bytes())

    def _values_dtype(self) -> Any:
        return object if self._kind == "str" else np.int64

    # -- bytes ---------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """Serialize parameters and state (canonical: equal states give equal bytes)."""
        meta = {"config": self.config.to_dict(), "kind": self._kind, "now": self._now}
        pend_items, pend_slots = self._dedupe(self._pend_items, self._pend_slots)
        arrays: dict[str, np.ndarray] = {"pend:item": pend_items, "pend:slot": pend_slots}
        for i, core in enumerate(self._cores or []):
            for name, arr in core.canonical().items():
                arrays[f"{i}:{name}"] = arr
        return pack_state(self.FORMAT_TAG, self.FORMAT_VERSION, meta, arrays)

    @classmethod
    @state_decoder
    def from_bytes(cls, blob: bytes) -> Any:
        """Rebuild an object from :meth:`to_bytes` output."""
        meta, arrays = unpack_state(blob, cls.FORMAT_TAG, cls.FORMAT_VERSION)
        obj = cls._from_config(cls.CONFIG(**meta["config"]))
        kind, now = meta["kind"], meta["now"]
        if kind not in (None, "int", "str") or (now is not None and not isinstance(now, int)):
            msg = f"bad kind {kind!r} or slot {now!r}"
            raise ValueError(msg)
        obj._now = now
        if kind is not None:
            obj._set_kind(kind)
            for i, core in enumerate(obj._cores):
                prefix = f"{i}:"
                core.load({k[len(prefix):]: v for k, v in arrays.items()
                           if k.startswith(prefix)})
        obj._pend_items = arrays["pend:item"]
        obj._pend_slots = arrays["pend:slot"].astype(np.int64)
        if obj._pend_items.size != obj._pend_slots.size:
            msg = "buffered items and slots differ in length"
            raise ValueError(msg)
        if obj._pend_items.dtype != object:
            obj._pend_items = obj._pend_items.astype(np.int64)
        return obj

    @classmethod
    def from_config(cls, config: Any) -> Any:
        """Build an instance from its validated configuration object.

        Examples
        --------
        >>> from windowkit.core.persistence import PersistenceConfig, PersistentItemsSketch
        >>> PersistentItemsSketch.from_config(PersistenceConfig(0.5, 0.1, 100)).n
        100
        """
        obj = cls.__new__(cls)
        SlotStream.__init__(obj, config)
        return obj

    _from_config = from_config

    def __getstate__(self) -> dict[str, bytes]:
        return {"state": self.to_bytes()}

    def __setstate__(self, state: dict[str, bytes]) -> None:
        other = type(self).from_bytes(state["state"])
        self.__dict__.update(other.__dict__)

    # -- merge ---------------------------------------------------------------------------------
    def _merge_into(self, other: SlotStream) -> None:
        if other is self:
            msg = "cannot merge a sketch with itself"
            raise ValueError(msg)
        if type(other) is not type(self) or other.config != self.config:
            msg = (
                "Incompatible sketch configuration: "
                f"{type(self).__name__}{self.config.to_dict()} vs "
                f"{type(other).__name__}{getattr(other, 'config', None)!r}"
            )
            raise ValueError(msg)
        if other._now is None:
            return
        other = other.copy()
        if self._kind is not None and other._kind != self._kind:
            msg = f"cannot merge a sketch of {other._kind} items into one of {self._kind} items"
            raise ValueError(msg)
        now = other._now if self._now is None else max(self._now, other._now)
        self._set_kind(other._kind)
        self._set_now(now)
        other._set_now(now)
        for mine, theirs in zip(self._cores, other._cores, strict=False):
            a, b = mine.canonical(), theirs.canonical()
            common = np.intersect1d(a["key"], b["key"])
            if common.size:
                msg = (
                    "merge needs item-disjoint shards (partition the stream by item); "
                    f"{common.size} items are tracked by both sketches"
                )
                raise ValueError(msg)
            mine.load({k: _concat(a[k], b[k]) for k in a})
        self._pend_items = _concat(self._pend_items, other._pend_items)
        self._pend_slots = np.concatenate([self._pend_slots, other._pend_slots])
        self._pend_items, self._pend_slots = self._dedupe(self._pend_items, self._pend_slots)
        self._after_now()


def _concat(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == object or b.dtype == object:
        return np.concatenate([a.astype(object), b.astype(object)])
    return np.concatenate([a, b])


def describe(meta: dict[str, Any]) -> str:
    """``k=v`` list of a config dict, for messages."""
    return ", ".join(f"{k}={v!r}" for k, v in meta.items())


def report_frame(
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], kind: str | None, column: str,
    offset: float, min_count: int,
) -> pd.DataFrame:
    """Union of per-instance reports: items with ``count >= min_count``, value ``count+offset``.

    An item reported by several instances gets the largest value (the instance that started
    tracking it earliest counted the most slots).
    """
    keys = np.concatenate([p[0] for p in parts]) if parts else np.empty(0, np.uint64)
    values = _concat_all([p[1] for p in parts], kind)
    counts = np.concatenate([p[2] for p in parts]) if parts else np.empty(0, np.int64)
    keep = counts >= min_count
    keys, values, counts = keys[keep], values[keep], counts[keep]
    if len(parts) > 1 and keys.size:
        order = np.lexsort((-counts, keys))
        keys, values, counts = keys[order], values[order], counts[order]
        first = np.ones(keys.size, dtype=bool)
        first[1:] = keys[1:] != keys[:-1]
        keys, values, counts = keys[first], values[first], counts[first]
    order = np.argsort(values, kind="stable")
    dtype = "float64" if offset else "int64"
    return pd.DataFrame(
        {"item": values[order], column: (counts[order] + offset).astype(dtype)}
    )


def _concat_all(arrays: list[np.ndarray], kind: str | None) -> np.ndarray:
    if not arrays:
        return np.empty(0, dtype=object if kind == "str" else np.int64)
    if kind == "str":
        return np.concatenate([a.astype(object) for a in arrays])
    return np.concatenate(arrays)


class SketchParameters:
    """Read-only parameters shared by the two sketches (from their ``PersistenceConfig``)."""

    alpha = property(lambda self: self.config.alpha, doc="Persistence threshold.")
    epsilon = property(lambda self: self.config.epsilon, doc="Uncertainty parameter.")
    n = property(lambda self: self.config.n, doc="Window length in slots.")
    delta = property(lambda self: self.config.delta, doc="False-negative probability.")
    seed = property(lambda self: self.config.seed, doc="Hash seed.")
    tau = property(lambda self: self.config.tau, doc="Sampling probability 2/(epsilon n).")
    threshold = property(lambda self: self.config.threshold, doc="T = alpha n - epsilon n/2.")
    instances = property(lambda self: self.config.instances, doc="Independent instances.")


def check_fixed_window(
    slots: np.ndarray, start: int, n: int, bounds: tuple[int, int] | None = None
) -> None:
    """Raise ``ValueError`` unless every slot lies in the fixed window ``[start, start + n)``.

    ``bounds``, when known, are the least and greatest slot (spares two passes over ``slots``).

    Examples
    --------
    >>> check_fixed_window(np.array([0, 3]), 0, 4)
    >>> check_fixed_window(np.array([0, 4]), 0, 4)
    Traceback (most recent call last):
    ...
    ValueError: `slots` must lie in the fixed window [start, start + n) = [0, 4); got 4
    """
    lo, hi = start, start + n
    least, greatest = (slots.min(), slots.max()) if bounds is None else bounds
    if least < lo or greatest >= hi:
        bad = int(slots[(slots < lo) | (slots >= hi)][0])
        msg = f"`slots` must lie in the fixed window [start, start + n) = [{lo}, {hi}); got {bad}"
        raise ValueError(msg)
