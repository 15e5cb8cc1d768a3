"""Persistent items as a :class:`~windowkit.core.operator.StreamOperator` (for the Spark adapter).

Rows carry ``time`` (int64 microseconds, sorted) and ``item``. Time is cut into slots of
``slot_length`` microseconds aligned at ``origin``: slot ``s`` is
``[origin + s * slot_length, origin + (s + 1) * slot_length)``. A slot *closes* when a row of a
later slot arrives, when :meth:`~PersistentItemsOperator.advance` receives a watermark at or
past the slot's last microsecond, or at :meth:`~PersistentItemsOperator.finish`.

* ``mode="sliding"``: when slot ``c`` closes, one row per item reported for the window of the
  ``window`` most recent slots ``[c - window + 1, c]`` (empty slots close too; once the sketch
  holds no tuple nothing more is emitted until new rows arrive).
* ``mode="fixed"``: tumbling windows of ``window`` slots, ``[k * window, (k + 1) * window)``;
  when a window's last slot closes (or at ``finish``) one row per reported item, with
  ``window_end_slot`` the window's last slot; a fresh sketch starts for the next window.

Output rows are ``(window_end_slot int64, item, estimate float64)``, sorted by window end and
item. ``item`` is ``string`` (object) or ``int64`` as chosen by ``item_type``: strings suit IP
addresses and other identifiers; int64 suits hashed or numeric ids (e.g. ``xxhash64`` computed
in the JVM). What is emitted depends only on the rows and watermarks, not on how the rows are
split into batches.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

import numpy as np
import pandas as pd

from windowkit.core.chunks import COUNT
from windowkit.core.durations import Duration
from windowkit.core.factorize import factorize
from windowkit.core.operator import INPUT_END, TIME, StreamOperator
from windowkit.core.persistence import (
    ExactConfig,
    ExactPersistence,
    PersistenceConfig,
    PersistentItemsSketch,
    SlidingPersistentItemsSketch,
)
from windowkit.core.registry import register
from windowkit.core.serialization import pack_state, state_decoder, unpack_state
from windowkit.core.validation import check_choice, check_in_range, check_int

ITEM = "item"
"""Name of the item column."""

ItemType = Literal["string", "int64"]
Mode = Literal["sliding", "fixed"]


@register()
class PersistentItemsOperator(StreamOperator):
    """Report alpha-persistent items per slot (sliding) or per tumbling window (fixed).

    Parameters
    ----------
    alpha, epsilon : float
        Persistence threshold and uncertainty (see :class:`PersistenceConfig`).
    window : int
        Window length in slots.
    slot_length : int, str or datetime.timedelta
        Slot duration: microseconds, ``"15 minutes"`` or a ``timedelta``.
    origin : int
        Microsecond at which slot 0 starts.
    mode : {"sliding", "fixed"}
        Sliding window ending at every slot, or tumbling windows of ``window`` slots.
    item_type : {"string", "int64"}
        Type of the ``item`` column in and out.
    delta : float, optional
        False-negative probability (amplification by independent instances).
    seed : int
        Hash seed.

    Examples
    --------
    >>> op = PersistentItemsOperator(alpha=0.5, epsilon=0.2, window=10, slot_length=10,
    ...                              item_type="int64")
    >>> batch = pd.DataFrame({"time": [0, 10, 15, 20, 30, 41], "item": [1, 1, 2, 1, 1, 2]})
    >>> op.process(batch)       # slot 4 opens: slots 0-3 close; item 1 needs 3 slots
       window_end_slot  item  estimate
    0                2     1       4.0
    1                3     1       5.0
    >>> op.next_deadline()      # slot 4 is [40, 50)
    49
    >>> op.finish()
       window_end_slot  item  estimate
    0                4     1       5.0
    """

    FORMAT_TAG = "PERSOPR"
    FORMAT_VERSION = 1
    ORDERS_ROWS_ITSELF = True
    #: Items are the keys of the state (sliding mode, see :attr:`KEY_PARTITIONED`).
    CHUNK_KEY = ITEM

    def __init__(
        self,
        alpha: float,
        epsilon: float,
        window: int,
        slot_length: int | str | dt.timedelta,
        *,
        origin: int = 0,
        mode: Mode = "sliding",
        item_type: ItemType = "string",
        delta: float | None = None,
        seed: int = 0,
    ) -> None:
        self._init_slots(slot_length, origin, mode, item_type)
        self.config = PersistenceConfig(alpha=alpha, epsilon=epsilon, n=window, delta=delta,
                                        seed=seed)

    def _init_slots(self, slot_length: int | str | dt.timedelta, origin: int, mode: str,
                    item_type: str) -> None:
        """The slots, mode and item type, checked, and no slot open yet."""
        if isinstance(slot_length, int) and not isinstance(slot_length, bool):
            slot_us = check_int("slot_length", slot_length, 1)
        else:
            slot_us = Duration.parse(slot_length, "slot_length", allow_rows=False).amount
            check_int("slot_length", slot_us, 1)
        self.slot_length = slot_us
        self.origin = check_int("origin", origin, -(2**62), 2**62)
        self.mode = check_choice("mode", mode, ("sliding", "fixed"))
        self.item_type = check_choice("item_type", item_type, ("string", "int64"))
        self._open: int | None = None  # the open slot; every slot before it is closed
        self._end_slot: int | None = None  # a bounded input's last slot, if given
        self._sketch: (PersistentItemsSketch | SlidingPersistentItemsSketch
                       | ExactPersistence | None) = None

    @property
    def output_schema(self) -> list[tuple[str, str]]:
        """``window_end_slot`` int64, ``item`` (``item_type``), ``estimate`` float64."""
        return [("window_end_slot", "int64"), (ITEM, self.item_type), ("estimate", "float64")]

    @property
    def input_schema(self) -> list[tuple[str, str]]:
        """``item``, of ``item_type``."""
        return [(ITEM, self.item_type)]

    @property
    def route(self) -> str:
        """``item``: the state is kept per item, so an item's rows must meet (no key)."""
        return ITEM

    @property
    def ends_with_input(self) -> bool:
        """Sliding windows: True, every instance reports windows up to the input's last slot
        (an instance holding only some items may see its own last row earlier)."""
        return self.mode == "sliding"

    # -- slots ---------------------------------------------------------------------------------
    def _slot_of(self, times: np.ndarray) -> np.ndarray:
        return (times - self.origin) // self.slot_length

    def _new_sketch(self, slot: int) -> PersistentItemsSketch | SlidingPersistentItemsSketch:
        cfg = self.config
        if self.mode == "sliding":
            return SlidingPersistentItemsSketch.from_config(cfg)
        start = (slot // cfg.n) * cfg.n
        return PersistentItemsSketch.from_config(
            PersistenceConfig(cfg.alpha, cfg.epsilon, cfg.n, cfg.delta, cfg.seed, 0, start)
        )

    def _report(self, end_slot: int) -> pd.DataFrame | None:
        found = self._found() if self._sketch is not None else None
        if found is None or not len(found):
            return None
        measure, kind = self.output_schema[2]
        return pd.DataFrame({
            "window_end_slot": np.full(len(found), end_slot, dtype=np.int64),
            ITEM: found["item"].to_numpy(),
            measure: found[measure].to_numpy(dtype=kind),
        })

    def _found(self) -> pd.DataFrame:
        """The open state's persistent items: ``item`` and the output's measure."""
        return self._sketch.persistent_items()

    def _close_before(self, slot: int, out: list[pd.DataFrame]) -> None:
        """Close every open slot before ``slot`` and make ``slot`` the open one."""
        if self._open is None or slot <= self._open:
            return
        n = self.config.n
        if self.mode == "sliding":
            sketch = self._sketch
            c = self._open
            while c < slot and sketch is not None and sketch.num_tuples > 0:
                sketch.advance(c)
                rows = self._report(c)
                if rows is not None:
                    out.append(rows)
                c += 1
            if sketch is not None and sketch.current_slot is not None:
                sketch.advance(max(sketch.current_slot, slot - 1))
        else:
            window_end = (self._open // n + 1) * n - 1
            if slot > window_end:
                rows = self._report(window_end)
                if rows is not None:
                    out.append(rows)
                self._sketch = None
        self._open = slot

    # -- StreamOperator ------------------------------------------------------------------------
    def process(self, batch: pd.DataFrame) -> pd.DataFrame:
        """Consume rows in any order; return the rows of the slots this closes.

        An :data:`~windowkit.core.operator.INPUT_END` column, if present, is the bounded
        input's last time: :meth:`finish` then closes the sliding windows up to its slot.
        Rows are taken slot by slot (stably). Their order within a slot does not matter: a
        slot only tells which items occurred in it, and the sampling hash depends on the
        (item, slot) pair alone.
        """
        if not len(batch):
            return self.empty_output()
        if INPUT_END in batch:
            self._end_slot = int(self._slot_of(np.int64(batch[INPUT_END].max())))
        times = batch[TIME].to_numpy(dtype=np.int64)
        items = batch[ITEM]
        if self.item_type == "string" and items.dtype != object:
            items = items.astype(str)
        items = items.to_numpy()
        slots = self._slot_of(times)
        if len(slots) > 1 and (slots[1:] < slots[:-1]).any():
            order = _stable_order(slots)
            slots, items = slots[order], items[order]
        if self._open is not None and slots[0] < self._open:
            msg = (
                f"row at time {int(times[0])} belongs to slot {int(slots[0])}, "
                f"which is already closed (open slot: {self._open})"
            )
            raise ValueError(msg)
        out: list[pd.DataFrame] = []
        bounds = np.flatnonzero(np.diff(slots)) + 1
        starts = np.concatenate([[0], bounds])
        ends = np.concatenate([bounds, [slots.size]])
        for lo, hi in zip(starts.tolist(), ends.tolist(), strict=False):
            slot = int(slots[lo])
            if self._open is None:
                self._open = slot
            self._close_before(slot, out)
            if self._sketch is None:
                self._sketch = self._new_sketch(slot)
            self._sketch.update(items[lo:hi], slots[lo:hi])
        return self._concat(out)

    def advance(self, watermark: int) -> pd.DataFrame:
        """Close the slots whose last microsecond is ``<= watermark``; return their rows."""
        out: list[pd.DataFrame] = []
        first_open = (int(watermark) - self.origin + 1) // self.slot_length
        self._close_before(first_open, out)
        return self._concat(out)

    def finish(self) -> pd.DataFrame:
        """Close the open slot (fixed mode: the open window) and return its rows.

        Later watermarks emit nothing: windows after the end of the input are not reported.
        """
        if self._open is None:
            return self.empty_output()
        out: list[pd.DataFrame] = []
        if self.mode == "fixed":
            n = self.config.n
            self._close_before((self._open // n + 1) * n, out)
        else:
            last = self._open if self._end_slot is None else max(self._open, self._end_slot)
            self._close_before(last + 1, out)
        self._sketch = None  # the input has ended: nothing more to report
        return self._concat(out)

    def next_deadline(self) -> int | None:
        """The watermark at which the open slot (fixed mode: the open window) closes.

        ``None`` while nothing could be reported (no row yet, or no tuple left).
        """
        if self._open is None or self._sketch is None or self._sketch.num_tuples == 0:
            return None
        end_slot = self._open
        if self.mode == "fixed":
            end_slot = (self._open // self.config.n + 1) * self.config.n - 1
        return self.origin + (end_slot + 1) * self.slot_length - 1

    def _concat(self, frames: list[pd.DataFrame]) -> pd.DataFrame:
        if not frames:
            return self.empty_output()
        out = pd.concat(frames, ignore_index=True)
        if self.item_type == "int64":
            out[ITEM] = out[ITEM].astype(np.int64)
        return out

    # -- state per item --------------------------------------------------------------------------
    @property
    def KEY_PARTITIONED(self) -> bool:  # noqa: N802 - the StreamOperator flag, per instance
        """Sliding mode keeps its state per item: an item's tuples, last slot and report
        depend on its own rows and the slots closed, so an engine may store items in chunks
        and load only those a batch touches. What stays whole is the open slot and the
        sketch's current slot (kept with the runner). Fixed mode reports every item at each
        window's end and so touches them all: it is not partitioned."""
        return self.mode == "sliding"

    def key_state(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The items tracked and their state (sliding mode): per instance of the sketch the
        item's last slot and number of tuples (0: not tracked there), and its tuples' slots
        and counts, in item order then instance order (flat lists, see
        :mod:`windowkit.core.chunks`).

        Examples
        --------
        >>> op = PersistentItemsOperator(0.5, 0.4, 5, 10, item_type="int64")
        >>> _ = op.process(pd.DataFrame({"time": [0, 10, 20], "item": [7, 7, 8]}))
        >>> items, arrays = op.key_state()
        >>> items.tolist(), arrays["length"][:, 0].tolist(), arrays["tslot[]"].tolist()
        ([7, 8], [2, 1], [0, 1, 2])
        """
        instances = self.config.instances
        cores = self._sketch._cores if self._sketch is not None else None
        if not cores:
            return _empty_items(self.item_type), _empty_item_arrays(instances)
        parts = [core.canonical() for core in cores]
        inverse, items = factorize(np.concatenate([p["value"] for p in parts])
                                      if len(parts) > 1 else parts[0]["value"])
        items = np.asarray(items, dtype=object if self.item_type == "string" else np.int64)
        held = len(items)
        last = np.zeros((held, instances), dtype=np.int64)
        length = np.zeros((held, instances), dtype=np.int64)
        owners, instance_of, at = [], [], 0
        for i, part in enumerate(parts):
            where = inverse[at:at + len(part["key"])]
            at += len(part["key"])
            last[where, i] = part["last"]
            length[where, i] = part["length"]
            owners.append(np.repeat(where, part["length"]))
            instance_of.append(np.full(len(part["tslot"]), i, dtype=np.int64))
        order = np.lexsort((np.concatenate(instance_of), np.concatenate(owners)))
        return items, {
            "last": last, "length": length, COUNT: length.sum(axis=1),
            "tslot[]": np.concatenate([p["tslot"] for p in parts])[order].astype(np.int64),
            "tcount[]": np.concatenate([p["tcount"] for p in parts])[order].astype(np.int64),
        }

    def load_key_state(self, keys: np.ndarray, arrays: dict[str, np.ndarray]) -> None:
        """Track exactly the items ``keys`` with the state ``arrays`` (of :meth:`key_state`),
        then drop the tuples the current slot has expired since they were saved.

        Examples
        --------
        >>> op = PersistentItemsOperator(0.5, 0.4, 5, 10, item_type="int64")
        >>> _ = op.process(pd.DataFrame({"time": [0, 10, 20, 30], "item": [7, 7, 7, 7]}))
        >>> saved = op.key_state()
        >>> op.load_key_state(saved[0][:0], {n: a[:0] for n, a in saved[1].items()})
        >>> op.advance(39).empty            # item 7 is not held: nothing to report
        True
        >>> op.load_key_state(*saved)
        >>> op.advance(49)["item"].tolist()  # slot 4 closes: 7 held 4 of the last 5 slots
        [7]
        """
        instances = self.config.instances
        if set(arrays) != set(_empty_item_arrays(instances)):
            msg = "PersistentItemsOperator key state: wrong fields"
            raise ValueError(msg)
        sketch = self._sketch
        if sketch is None or sketch._cores is None:
            if len(keys):
                msg = "PersistentItemsOperator key state: items given before any row"
                raise ValueError(msg)
            return
        length = np.asarray(arrays["length"], dtype=np.int64).reshape(len(keys), instances)
        instance_of = np.repeat(np.tile(np.arange(instances), len(keys)), length.ravel())
        values = np.asarray(keys, dtype=object if self.item_type == "string" else np.int64)
        # an item's hash is not stored: 8 random bytes an item, more than the rest compressed
        hashes = sketch._hash(values)
        for i, core in enumerate(sketch._cores):
            mine = length[:, i] > 0
            core.load({
                "key": hashes[mine], "last": arrays["last"][mine, i],
                "value": values[mine], "length": length[mine, i],
                "tslot": arrays["tslot[]"][instance_of == i],
                "tcount": arrays["tcount[]"][instance_of == i],
            })
        sketch._after_now()

    def key_deadlines(self, arrays: dict[str, np.ndarray] | None = None) -> np.ndarray | None:
        """The watermark closing the open slot for each item the slot's close would report
        (int64 max for the others: without a row of theirs they cannot become reportable,
        since expiry only lowers an item's count), in :meth:`key_state` order.

        Examples
        --------
        >>> op = PersistentItemsOperator(0.5, 0.2, 10, 10, item_type="int64")
        >>> _ = op.process(pd.DataFrame({"time": [0, 10, 20, 30, 45], "item": [7] * 4 + [8]}))
        >>> op.key_state()[0].tolist(), op.key_deadlines()[0]   # slot 4 ends at 49
        ([7, 8], np.int64(49))
        >>> bool(op.key_deadlines()[1] == np.iinfo(np.int64).max)  # 8: 1 slot of the 3 needed
        True
        >>> op.advance(49)["item"].tolist()
        [7]
        """
        if arrays is None:
            arrays = self.key_state()[1]
        if not len(arrays[COUNT]) or self._open is None:
            return None
        length = arrays["length"]
        # each instance's earliest tuple holds the item's count (the largest n_{d,t'})
        first = np.cumsum(length.ravel()) - length.ravel()
        head = arrays["tcount[]"][np.minimum(first, max(len(arrays["tcount[]"]) - 1, 0))]
        counted = np.where(length.ravel() > 0, head, 0).reshape(length.shape)
        due = counted.max(axis=1) >= self.config.min_count
        deadline = self.origin + (self._open + 1) * self.slot_length - 1
        return np.where(due, deadline, np.iinfo(np.int64).max).astype(np.int64)

    # -- bytes ---------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """Serialize parameters, the open slot and the sketch."""
        meta = {**self._parameters(), "open": self._open,
                "sketch": None if self._sketch is None else type(self._sketch).__name__}
        arrays = {}
        if self._sketch is not None:
            arrays["sketch"] = np.frombuffer(self._sketch.to_bytes(), dtype=np.uint8)
        return pack_state(self.FORMAT_TAG, self.FORMAT_VERSION, meta, arrays)

    def _parameters(self) -> dict:
        """The constructor's parameters, as :meth:`to_bytes` stores them."""
        cfg = self.config
        return {"alpha": cfg.alpha, "epsilon": cfg.epsilon, "window": cfg.n,
                "delta": cfg.delta, "seed": cfg.seed, "slot_length": self.slot_length,
                "origin": self.origin, "mode": self.mode, "item_type": self.item_type}

    @classmethod
    def _from_parameters(cls, meta: dict) -> PersistentItemsOperator:
        return cls(meta["alpha"], meta["epsilon"], meta["window"], meta["slot_length"],
                   origin=meta["origin"], mode=meta["mode"], item_type=meta["item_type"],
                   delta=meta["delta"], seed=meta["seed"])

    @classmethod
    @state_decoder
    def from_bytes(cls, blob: bytes) -> PersistentItemsOperator:
        """Rebuild an operator from :meth:`to_bytes` output."""
        meta, arrays = unpack_state(blob, cls.FORMAT_TAG, cls.FORMAT_VERSION)
        op = cls._from_parameters(meta)
        op._open = meta["open"]
        if meta["sketch"] is not None:
            op._sketch = _STATES[meta["sketch"]].from_bytes(arrays["sketch"].tobytes())
        return op


def _empty_items(item_type: str) -> np.ndarray:
    return np.zeros(0, dtype=object if item_type == "string" else np.int64)


def _empty_item_arrays(instances: int) -> dict[str, np.ndarray]:
    """The layout of :meth:`PersistentItemsOperator.key_state`, with no item."""
    per_instance = np.zeros((0, instances), dtype=np.int64)
    return {"last": per_instance,
            "length": per_instance.copy(), COUNT: np.zeros(0, dtype=np.int64),
            "tslot[]": np.zeros(0, dtype=np.int64), "tcount[]": np.zeros(0, dtype=np.int64)}


def _stable_order(slots: np.ndarray) -> np.ndarray:
    """A stable sort of slot numbers; a radix sort when the batch spans fewer than 2^16."""
    low = slots.min()
    if slots.max() - low < 65536:
        return np.argsort((slots - low).astype(np.uint16), kind="stable")
    return np.argsort(slots, kind="stable")


@register()
class ExactPersistentItemsOperator(PersistentItemsOperator):
    """The exact alpha-persistent items, reported as :class:`PersistentItemsOperator` reports
    the sketch's: same slots, windows, closing rules and routing, with the naive algorithm's
    exact count (:class:`~windowkit.core.persistence.ExactPersistence`) in place of the
    sketch. An item is reported for a window when it occurs in at least
    ``max(1, ceil(alpha * window))`` of its slots; output rows are ``(window_end_slot int64,
    item, persistence int64)``. Its state is whole (one tuple per item and slot of the
    window), not kept per item.

    Parameters
    ----------
    alpha : float
        Persistence threshold, in ``(0, 1]``.
    window, slot_length, origin, mode, item_type, seed
        As for :class:`PersistentItemsOperator`.

    Examples
    --------
    >>> op = ExactPersistentItemsOperator(alpha=0.5, window=4, slot_length=10,
    ...                                   item_type="int64")
    >>> op.process(pd.DataFrame({"time": [0, 10, 25, 41], "item": [1, 1, 2, 1]}))
       window_end_slot  item  persistence
    0                1     1            2
    1                2     1            2
    2                3     1            2
    >>> op.finish()
       window_end_slot  item  persistence
    0                4     1            2
    """

    FORMAT_TAG = "PERSEXOP"
    FORMAT_VERSION = 1

    def __init__(
        self,
        alpha: float,
        window: int,
        slot_length: int | str | dt.timedelta,
        *,
        origin: int = 0,
        mode: Mode = "sliding",
        item_type: ItemType = "string",
        seed: int = 0,
    ) -> None:
        # (not the sketch operator's __init__: it builds the sketch's config, with epsilon)
        self._init_slots(slot_length, origin, mode, item_type)
        self.alpha = float(check_in_range("alpha", alpha, 0, 1, low_open=True))
        self.config = ExactConfig(n=window, window=self.mode, seed=seed)

    @property
    def output_schema(self) -> list[tuple[str, str]]:
        """``window_end_slot`` int64, ``item`` (``item_type``), ``persistence`` int64."""
        return [("window_end_slot", "int64"), (ITEM, self.item_type), ("persistence", "int64")]

    @property
    def KEY_PARTITIONED(self) -> bool:  # noqa: N802 - the StreamOperator flag, per instance
        """The exact state is kept whole (see :meth:`to_bytes`)."""
        return False

    def _new_sketch(self, slot: int) -> ExactPersistence:
        n = self.config.n
        start = 0 if self.mode == "sliding" else (slot // n) * n
        return ExactPersistence(n, window=self.mode, seed=self.config.seed, start=start)

    def _found(self) -> pd.DataFrame:
        return self._sketch.persistent_items(self.alpha)

    def _parameters(self) -> dict:
        return {"alpha": self.alpha, "window": self.config.n, "seed": self.config.seed,
                "slot_length": self.slot_length, "origin": self.origin, "mode": self.mode,
                "item_type": self.item_type}

    @classmethod
    def _from_parameters(cls, meta: dict) -> ExactPersistentItemsOperator:
        return cls(meta["alpha"], meta["window"], meta["slot_length"], origin=meta["origin"],
                   mode=meta["mode"], item_type=meta["item_type"], seed=meta["seed"])


#: The states an operator's bytes may hold, by the name :meth:`PersistentItemsOperator.to_bytes`
#: stores (windowkit's own classes only).
_STATES = {c.__name__: c for c in (PersistentItemsSketch, SlidingPersistentItemsSketch,
                                   ExactPersistence)}
