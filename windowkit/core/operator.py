"""The contract between core operators and the engines that drive them.

A :class:`StreamOperator` consumes batches of rows that are already in event-time order (rows at
one time in an order of their contents, :mod:`windowkit.core.ordering`) and carries its state
between batches. :class:`EventTimeRunner` puts any operator behind an
event-time buffer: it holds rows until the watermark passes them, releases them in time order,
counts and returns rows that arrive behind the watermark, and serializes operator and buffer
together. The Spark adapter (``windowkit.spark.adapter``) only moves bytes and rows in and out of
a runner, so every technique plugs into Spark by implementing this one interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from windowkit.core.ordering import time_order
from windowkit.core.registry import lookup, name_of_old_path, register
from windowkit.core.serialization import (
    StateFormatError,
    pack_state,
    state_decoder,
    state_tag,
    unpack_state,
)

TIME = "time"
"""Name of the event-time column (int64 microseconds) inside the core."""
KEY = "key"
"""Name of the grouping column inside the core."""

#: Logical column types an operator may declare in its output schema.
COLUMN_TYPES = ("int64", "float64", "bool", "string", "timestamp", "duration", "binary")
#: Logical types an operator may declare for its inputs (:attr:`StreamOperator.input_schema`):
#: those of :data:`COLUMN_TYPES`, ``"category"`` (text the operator only compares or hashes by
#: value: it receives a pandas Categorical, so that it works once per distinct value of a
#: batch) and ``"code"`` (an integer in :data:`CODE_RANGE`, -1 meaning unknown, received as
#: int8: an engine may carry it in a few bits of another column; an engine reports a row whose
#: code is null as malformed and still gives it to the operator, as -1).
INPUT_TYPES = (*COLUMN_TYPES, "category", "code")
#: The values of a ``"code"`` input.
CODE_RANGE = (-1, 2)
#: The input column in which an engine gives an operator that :attr:`~StreamOperator.
#: ends_with_input` the bounded input's last time (int64 µs, the same in every row).
INPUT_END = "input_end"


class StreamOperator(ABC):
    """An incremental operator over an event-time-ordered stream.

    Subclasses declare ``FORMAT_TAG`` (8 ASCII characters) and ``output_schema`` (a list of
    ``(name, type)`` with types from :data:`COLUMN_TYPES`; timestamps and durations are int64
    microseconds).
    """

    FORMAT_TAG: ClassVar[str]
    #: True if :meth:`process` takes rows in any order and orders them as it needs itself
    #: (e.g. each key's rows by time), with the output it gives them in time order; the
    #: runner then skips its time sort of all rows, which such an operator would undo. Such
    #: an operator orders rows at one time by their contents itself (or does not depend on
    #: their order), e.g. with :func:`windowkit.core.ordering.key_time_order`.
    ORDERS_ROWS_ITSELF: ClassVar[bool] = False
    #: True if the state and the output are a union of independent per-key parts: a key's
    #: output depends only on its own rows and the watermarks (and the operator's state
    #: without its keys, small and the same for all of them). An engine may then store the
    #: keys in separate chunks (:mod:`windowkit.core.chunks`) and load only those a batch
    #: touches. Such an operator implements :meth:`key_state`, :meth:`load_key_state` and
    #: :meth:`key_deadlines`; its key is the rows' :attr:`CHUNK_KEY` column.
    KEY_PARTITIONED: ClassVar[bool] = False
    #: The rows' column holding the key of a ``KEY_PARTITIONED`` operator's state.
    CHUNK_KEY: ClassVar[str] = KEY
    #: True if the operator takes integer keys as int64 as well as text keys (it only groups
    #: and compares them, and gives them back as it got them): an engine may then carry an
    #: integer key as an integer, which costs less than its text.
    INTEGER_KEYS: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # an operator's decoder, even one written without @state_decoder, fails only with a
        # StateFormatError naming the operator (issue #16, point 10)
        decode = cls.__dict__.get("from_bytes")
        if isinstance(decode, classmethod) and not getattr(decode.__func__, "decodes_state", False):
            cls.from_bytes = classmethod(state_decoder(decode.__func__))  # type: ignore[method-assign]

    @property
    @abstractmethod
    def output_schema(self) -> list[tuple[str, str]]:
        """Names and logical types of the output columns."""

    @property
    def input_schema(self) -> list[tuple[str, str]]:
        """Names and logical types (:data:`INPUT_TYPES`) of the columns :meth:`process` reads
        besides ``key`` and ``time``, where the type tells an engine how to carry them; an
        input not listed arrives as the engine's own type for it. Default: none listed."""
        return []

    @property
    def derived_outputs(self) -> dict[str, str]:
        """Output columns that are SQL expressions of other output columns (times as int64
        µs), which an engine may compute itself instead of taking them from :meth:`process`.
        Default: none."""
        return {}

    @property
    def route(self) -> str:
        """The input column whose equal values must meet in one instance of the operator:
        ``key`` (default: each key's rows), or an input whose values the operator keeps its
        state by (it then needs no key)."""
        return KEY

    @property
    def event_time_output(self) -> str | None:
        """The ``"timestamp"`` output column an engine may make the output's event time (so
        that a stateful step downstream, e.g. a join or a windowed aggregation, has a
        watermark on it), or None for no such column.

        The operator must never emit a row whose value there is behind the watermark it has
        been advanced to: downstream, such a row would be late, and Spark refuses it.
        Default: None."""
        return None

    @property
    def ends_with_input(self) -> bool:
        """True if, on a bounded input whose rows are spread over several instances, each
        instance must end at the input's last time rather than at its own last row (e.g. so
        that every instance closes the same windows). An engine then gives every row the
        input's last time in an :data:`INPUT_END` column, which :meth:`process` reads; on an
        unbounded input the watermark does this and no such column comes. Default: False."""
        return False

    @abstractmethod
    def process(self, batch: pd.DataFrame) -> pd.DataFrame:
        """Consume rows sorted by ``time``, rows at one time by their other input columns
        (:func:`windowkit.core.ordering.time_order`); return new output rows.

        With ``ORDERS_ROWS_ITSELF`` the rows may come in any order.
        """

    def advance(self, watermark: int) -> pd.DataFrame:
        """Learn that no row with ``time <= watermark`` will come; return rows this settles."""
        return self.empty_output()

    def finish(self) -> pd.DataFrame:
        """Learn that the input has ended; return the rows this settles."""
        return self.empty_output()

    def next_deadline(self) -> int | None:
        """The smallest watermark at which :meth:`advance` would emit something, if any."""
        return None

    @abstractmethod
    def to_bytes(self) -> bytes:
        """Serialize parameters and state."""

    @classmethod
    @abstractmethod
    def from_bytes(cls, blob: bytes) -> StreamOperator:
        """Rebuild an operator from :meth:`to_bytes` output."""

    def empty_output(self) -> pd.DataFrame:
        """An empty frame with the output schema's columns and dtypes."""
        return empty_frame(self.output_schema)

    def key_state(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The keys held (int64 or objects) and the per-key state, arrays whose first axis
        runs over the keys (``KEY_PARTITIONED`` operators only)."""
        msg = f"{type(self).__name__} does not keep its state per key"
        raise NotImplementedError(msg)

    def load_key_state(self, keys: np.ndarray, arrays: dict[str, np.ndarray]) -> None:
        """Hold exactly the keys and state of a :meth:`key_state` result (of an operator with
        the same parameters), replacing any held (``KEY_PARTITIONED`` operators only)."""
        msg = f"{type(self).__name__} does not keep its state per key"
        raise NotImplementedError(msg)

    def key_deadlines(self, arrays: dict[str, np.ndarray] | None = None) -> np.ndarray | None:
        """Each held key's smallest watermark at which :meth:`advance` would emit something
        for it (int64 max: none), in :meth:`key_state` order; None if no key has one.
        ``arrays``: those :meth:`key_state` just returned, if the caller has them (an operator
        that derives deadlines from them need not build them again)."""
        return None


def empty_frame(schema: list[tuple[str, str]]) -> pd.DataFrame:
    """An empty DataFrame for a list of ``(name, logical type)``.

    Examples
    --------
    >>> empty_frame([("key", "string"), ("start", "timestamp")]).dtypes.tolist()
    [dtype('O'), dtype('int64')]
    """
    numpy_type = {"int64": "int64", "float64": "float64", "bool": "bool", "string": "object",
                  "timestamp": "int64", "duration": "int64", "binary": "object"}
    return pd.DataFrame({name: pd.Series([], dtype=numpy_type[kind]) for name, kind in schema})


@register()
class EventTimeRunner:
    """Drive a :class:`StreamOperator` from unordered batches and a watermark.

    Rows with ``time`` later than the watermark wait in a buffer; when the watermark passes
    them they are released to the operator sorted by time, and rows at one time by their other
    columns (values, keys, items: :func:`~windowkit.core.ordering.time_order`), so that the
    operator sees one order whatever the order the rows arrived in (which on Spark follows
    the input's partitioning and files). An operator that ``ORDERS_ROWS_ITSELF`` gets them
    as they are.
    A row whose time is at or before a watermark already applied is *late*: it is never given
    to the operator (that would reorder the stream), but returned to the caller and counted.

    Parameters
    ----------
    operator : StreamOperator
        The operator to drive.

    Examples
    --------
    >>> from windowkit.core.frames import ThresholdFramer
    >>> runner = EventTimeRunner(ThresholdFramer(min_duration="2 rows"))
    >>> batch = pd.DataFrame({"key": ["a"] * 4, "time": [3, 1, 2, 4],
    ...                       "value": [1, 0, 1, 0]})
    >>> out, late = runner.push(batch, watermark=4)
    >>> out[["start", "end", "status"]].values.tolist()
    [[2, 4, 'final']]
    >>> _, late = runner.push(batch.iloc[:1], watermark=4)
    >>> runner.late_rows, len(late)
    (1, 1)
    """

    FORMAT_TAG = "RUNNER"
    FORMAT_VERSION = 1

    def __init__(self, operator: StreamOperator) -> None:
        self.operator = operator
        self.watermark: int | None = None
        self.late_rows = 0
        self._buffer: pd.DataFrame | None = None

    @property
    def buffered_rows(self) -> int:
        """Rows waiting for the watermark."""
        return 0 if self._buffer is None else len(self._buffer)

    def push(
        self, batch: pd.DataFrame, watermark: int | None = None
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Add rows, then apply ``watermark`` (if given); return ``(output, late_rows)``."""
        late = batch.iloc[:0]
        if len(batch):
            if self.watermark is not None:
                is_late = batch[TIME].to_numpy() <= self.watermark
                if is_late.any():
                    late = batch[is_late]
                    batch = batch[~is_late]
                    self.late_rows += len(late)
            if len(batch):
                self._buffer = batch if self._buffer is None else _concat_rows(
                    [self._buffer, batch])
        return self.advance(watermark), late

    def advance(self, watermark: int | None) -> pd.DataFrame:
        """Apply ``watermark`` (if it moves forward): release rows it passes, settle output."""
        if watermark is None or (self.watermark is not None and watermark <= self.watermark):
            return self.operator.empty_output()
        released = self._release(watermark)
        self.watermark = watermark
        return _concat([released, self.operator.advance(watermark)], self.operator)

    def finish(self) -> pd.DataFrame:
        """Release every buffered row and end the input."""
        outputs = [self._release(None), self.operator.finish()]
        return _concat(outputs, self.operator)

    def next_timer(self) -> int | None:
        """The event time at which the watermark will release rows or settle output."""
        candidates = [self.operator.next_deadline()]
        if self._buffer is not None and len(self._buffer):
            candidates.append(int(self._buffer[TIME].min()))
        candidates = [c for c in candidates if c is not None]
        return min(candidates) if candidates else None

    def _release(self, watermark: int | None) -> pd.DataFrame:
        if self._buffer is None or not len(self._buffer):
            return self.operator.empty_output()
        times = self._buffer[TIME].to_numpy()
        if watermark is None or times.max() <= watermark:  # everything goes: no mask copies
            released, self._buffer = self._buffer, None
        else:
            ready = times <= watermark
            if not ready.any():
                return self.operator.empty_output()
            released = self._buffer[ready]
            self._buffer = _drop_unused_categories(self._buffer[~ready].reset_index(drop=True))
        if not self.operator.ORDERS_ROWS_ITSELF:
            # rows at one time by their contents: their arrival order depends on the input's
            # partitioning and files, and the operator's result must not
            order = time_order(released[TIME].to_numpy(),
                               [released[name] for name in released.columns if name != TIME])
            if order is not None:
                released = released.iloc[order]
        return self.operator.process(released.reset_index(drop=True))

    def to_bytes(self) -> bytes:
        """Serialize the operator, the buffer, the watermark and the late count."""
        buffer = self._buffer if self._buffer is not None else pd.DataFrame()
        arrays = {}
        for name in buffer.columns:
            column = buffer[name]
            if isinstance(column.dtype, pd.CategoricalDtype):  # keys: codes, not strings
                arrays[f"codes:{name}"] = column.cat.codes.to_numpy()
                arrays[f"categories:{name}"] = np.asarray(column.cat.categories, dtype=object)
            else:
                arrays[f"col:{name}"] = column.to_numpy()
        arrays["operator"] = np.frombuffer(self.operator.to_bytes(), dtype=np.uint8)
        # the operator's class is the tag in its own bytes' header
        meta = {
            "watermark": self.watermark,
            "late_rows": self.late_rows,
            "columns": list(buffer.columns),
        }
        return pack_state(self.FORMAT_TAG, self.FORMAT_VERSION, meta, arrays)

    @classmethod
    @state_decoder
    def from_bytes(cls, blob: bytes) -> EventTimeRunner:
        """Rebuild a runner from :meth:`to_bytes` output."""
        # views, not copies: the operator's bytes are decoded (and copied) by its own class,
        # and a buffer column is copied into its frame
        meta, arrays = unpack_state(blob, cls.FORMAT_TAG, cls.FORMAT_VERSION, copy=False)
        operator_bytes = memoryview(arrays["operator"])
        tag = state_tag(operator_bytes)
        if "operator_class" in meta and name_of_old_path(meta["operator_class"]) != tag:
            msg = (f"state names operator class {meta['operator_class']!r}, not the {tag!r} "
                   f"its operator's bytes hold")
            raise StateFormatError(msg)
        runner = cls(lookup(tag, StreamOperator, "operator").from_bytes(operator_bytes))
        runner.watermark = meta["watermark"]
        runner.late_rows = int(meta["late_rows"])
        if meta["columns"]:
            # copied: the columns are read-only views of ``blob``
            runner._buffer = pd.DataFrame({c: _column_from(arrays, c) for c in meta["columns"]},
                                          copy=True)
        return runner


def _column_from(arrays: dict[str, np.ndarray], name: str) -> np.ndarray | pd.Categorical:
    if f"codes:{name}" in arrays:
        return pd.Categorical.from_codes(arrays[f"codes:{name}"], arrays[f"categories:{name}"])
    return arrays[f"col:{name}"]


def _concat_rows(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate row frames; categorical columns stay categorical (``pd.concat`` would
    turn two categoricals with different categories into Python objects)."""
    columns = {}
    for name in frames[0].columns:
        parts = [f[name] for f in frames]
        if all(isinstance(p.dtype, pd.CategoricalDtype) for p in parts):
            columns[name] = union_categoricals(parts, ignore_order=True)
        else:
            columns[name] = pd.concat(parts, ignore_index=True)
    return pd.DataFrame(columns)


def _drop_unused_categories(frame: pd.DataFrame) -> pd.DataFrame:
    """Keep a held buffer's categories to the keys it holds, so they do not pile up."""
    for name in frame.columns:
        if isinstance(frame[name].dtype, pd.CategoricalDtype):
            frame[name] = frame[name].cat.remove_unused_categories()
    return frame


def _concat(frames: list[pd.DataFrame], operator: StreamOperator) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    if not frames:
        return operator.empty_output()
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
