"""What every windowed Count-Min shares: configuration, the step clock, batching, serialization.

Steps and windows
-----------------
A *step* is a sample arrival (``unit="samples"``, count-based window) or a time tick
(``unit="ticks"``, time-based window; paper Section 3.6). Steps are numbered ``0, 1, 2, ...``
and the sketch's clock :attr:`now` is the last step performed. The window at step ``now``
holds the samples of steps ``now - N + 1 .. now``.

- ``unit="samples"``: ``update(items)`` performs one step per item, the i-th item ever seen is
  step ``i`` (so ``now`` starts at -1 and equals ``n_samples - 1``).
- ``unit="ticks"``: the clock starts at tick 0. ``update(items)`` adds the items at the current
  tick (the paper's *update_sample*); ``advance_ticks(k)`` performs ``k`` ticks (the paper's
  *update_tick*); ``update(items, ticks=t)`` first advances the clock to each item's tick
  (``t`` non-decreasing, ``t[0] >= now``), so a whole time-stamped batch goes in one call.

Each step first runs the expiry part of the algorithm (update_tick), then the samples of that
step are added (update_sample); for ``unit="samples"`` this is exactly the per-sample order of
the paper's listings.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from windowkit.core.serialization import pack_state, state_decoder, unpack_state
from windowkit.core.sketches import _hashing
from windowkit.core.sketches._hashing import HashFamily
from windowkit.core.sketches.count_min import (
    CountMin,
    CountMinConfig,
    check_compatible,
    estimate_counts,
)
from windowkit.core.validation import check_choice, check_int

WindowUnit = Literal["samples", "ticks"]
"""``"samples"`` (count-based window) or ``"ticks"`` (time-based window)."""


@dataclass(frozen=True)
class WindowConfig:
    """Shape, seed and window of a windowed Count-Min sketch.

    Parameters
    ----------
    window : int
        ``N``, the window length in steps (samples or ticks).
    depth, width, seed : int
        The count matrix, see :class:`~windowkit.core.sketches.count_min.CountMinConfig`.
    unit : {"samples", "ticks"}
        Count-based or time-based window.
    hashing : {"multiply-shift", "spark"}
        The hash family of the matrix, see
        :class:`~windowkit.core.sketches.count_min.CountMinConfig`.

    Examples
    --------
    >>> WindowConfig(window=100, depth=1, width=28).unit
    'samples'
    """

    window: int
    depth: int
    width: int
    seed: int = 0
    unit: WindowUnit = "samples"
    hashing: HashFamily = "multiply-shift"

    def __post_init__(self) -> None:
        check_int("window", self.window, 1, 2**62)
        check_choice("unit", self.unit, ("samples", "ticks"))
        self.count_min_config  # noqa: B018 - validates depth, width, seed

    @property
    def count_min_config(self) -> CountMinConfig:
        """The underlying matrix configuration."""
        return CountMinConfig(self.depth, self.width, self.seed, self.hashing)


class WindowedCountMin:
    """Base class of the windowed Count-Min sketches (not used directly)."""

    FORMAT_TAG: ClassVar[str]
    FORMAT_VERSION: ClassVar[int] = 1
    CONFIG_CLS: ClassVar[type] = WindowConfig

    def __init__(
        self,
        window: int,
        *,
        depth: int,
        width: int,
        seed: int = 0,
        unit: WindowUnit = "samples",
        hashing: HashFamily = "multiply-shift",
        **params: Any,
    ) -> None:
        self.config = self.CONFIG_CLS(
            window=window, depth=depth, width=width, seed=seed, unit=unit, hashing=hashing,
            **params
        )
        self.now = -1 if unit == "samples" else 0
        self.n_samples = 0
        self._init_state()

    @classmethod
    def from_error(
        cls,
        epsilon: float,
        delta: float,
        *,
        window: int,
        seed: int = 0,
        unit: WindowUnit = "samples",
        hashing: HashFamily = "multiply-shift",
        **params: Any,
    ) -> WindowedCountMin:
        """Size the matrix for ``epsilon``, ``delta``: ``ceil(log2 1/delta)`` x ``ceil(e/eps)``.

        Examples
        --------
        >>> from windowkit.core.sketches import SimpleWindowCM
        >>> SimpleWindowCM.from_error(0.01, 0.5, window=50_000).width
        272
        """
        cm = CountMinConfig.from_error(epsilon, delta, seed, hashing)
        return cls(window, depth=cm.depth, width=cm.width, seed=seed, unit=unit, hashing=hashing,
                   **params)

    window = property(lambda self: self.config.window, doc="Window length ``N`` in steps.")
    depth = property(lambda self: self.config.depth, doc="Number of rows.")
    width = property(lambda self: self.config.width, doc="Number of columns.")
    seed = property(lambda self: self.config.seed, doc="Hash seed.")
    unit = property(lambda self: self.config.unit, doc="``'samples'`` or ``'ticks'``.")

    @property
    def epsilon(self) -> float:
        """The relative error ``e / width``."""
        return math.e / self.config.width

    # ---------------------------------------------------------------- updates
    def update(self, items: Any, ticks: Any = None) -> None:
        """Add a batch of items (integers or strings).

        Parameters
        ----------
        items : array-like
            The samples, in stream order.
        ticks : array-like of int, optional
            Only for ``unit="ticks"``: the tick of each item (non-decreasing, at least
            :attr:`now`). Without it every item is added at the current tick.
        """
        keys, mix = _hashing.prepare(items, self.config)
        k = int(keys.size)
        if self.config.unit == "samples":
            if ticks is not None:
                msg = "`ticks` is only accepted when unit='ticks'"
                raise ValueError(msg)
            if k == 0:
                return
            first = self.now + 1
            self._ingest(keys, mix, None, first)
            self.now = first + k - 1
        else:
            if ticks is None:
                t = None
                first = self.now
            else:
                t = np.ascontiguousarray(np.asarray(ticks), dtype=np.int64)
                if t.shape != (k,):
                    msg = f"`ticks` must have one tick per item ({k}); got shape {t.shape}"
                    raise ValueError(msg)
                if k and (t[0] < self.now or (np.diff(t) < 0).any()):
                    msg = f"`ticks` must be non-decreasing and at least now={self.now}"
                    raise ValueError(msg)
                first = int(t[0]) if k else self.now
                if k and int(t[0]) == int(t[-1]):
                    self.advance_ticks(int(t[0]) - self.now)
                    t = None
                    first = self.now
            if k == 0:
                return
            self._ingest(keys, mix, t, first)
            self.now = int(t[-1]) if t is not None else self.now
        self.n_samples += k

    def advance_ticks(self, k: int = 1) -> None:
        """Perform ``k`` time ticks with no sample (``unit="ticks"`` only)."""
        if self.config.unit != "ticks":
            msg = "`advance_ticks` needs unit='ticks'; count-based windows step on samples"
            raise ValueError(msg)
        check_int("k", k, 0)
        if k:
            self._advance_to(self.now + k)
            self.now += k

    # ---------------------------------------------------------------- queries
    def values(self) -> np.ndarray:
        """The current cell values ``(depth, width)`` of the window (float or int)."""
        raise NotImplementedError

    def estimate(self, items: Any) -> np.ndarray:
        """Estimated frequency of each item in the window (rounded, never negative, int64)."""
        cols = self.config.count_min_config.columns(items)
        return estimate_counts(self._values_at(cols), cols)

    def _values_at(self, cols: np.ndarray) -> np.ndarray:
        return self.values()

    def to_count_min(self) -> CountMin:
        """A :class:`CountMin` holding the current cell values; sums across shards (DistCM).

        Examples
        --------
        >>> from windowkit.core.sketches import SimpleWindowCM
        >>> s = SimpleWindowCM(10, depth=1, width=8)
        >>> s.update([1, 1, 2])
        >>> s.to_count_min().estimate([1]).tolist()
        [2]
        """
        vals = np.asarray(self.values())
        return CountMin.from_counts(self.config.count_min_config, vals, self.n_samples)

    def is_empty(self) -> bool:
        """True if no sample was ever added."""
        return self.n_samples == 0

    def memory_bytes(self) -> int:
        """Bytes of the arrays holding the state."""
        return int(sum(a.nbytes for a in self._state_arrays().values()))

    # ---------------------------------------------------------------- merge
    def merge(self, other: WindowedCountMin) -> None:
        """Add ``other`` (same class, configuration and seed) into this sketch.

        Time-based sketches first bring the lagging clock forward; count-based sketches must be
        at the same step (the merged sketch then holds both shards' last ``N`` samples).
        """
        if other is self:
            msg = "cannot merge `other`: a sketch cannot be merged with itself"
            raise ValueError(msg)
        if type(other) is not type(self):
            msg = f"`other` must be a {type(self).__name__}; got {type(other).__name__}"
            raise ValueError(msg)
        check_compatible(self.config, other.config, type(self).__name__)
        if other.is_empty() and other.now <= self.now:
            return
        if self.is_empty() and self.now <= other.now:
            self._advance_to(other.now)
            self.now = other.now
        if self.now != other.now:
            if self.config.unit == "samples":
                msg = (
                    "cannot merge `other`: count-based windows must be at the same step; "
                    f"self is at step {self.now}, other at step {other.now}"
                )
                raise ValueError(msg)
            if other.now < self.now:
                other = copy.deepcopy(other)
                other.advance_ticks(self.now - other.now)
            else:
                self.advance_ticks(other.now - self.now)
        self._merge_state(other)
        self.n_samples += other.n_samples

    # ---------------------------------------------------------------- bytes
    def to_bytes(self) -> bytes:
        """Serialize configuration, clock and state."""
        meta = {"config": asdict(self.config), "now": self.now, "n_samples": self.n_samples}
        meta.update(self._state_meta())
        return pack_state(self.FORMAT_TAG, self.FORMAT_VERSION, meta, self._state_arrays())

    @classmethod
    @state_decoder
    def from_bytes(cls, blob: bytes) -> WindowedCountMin:
        """Rebuild a sketch from :meth:`to_bytes` output (``ValueError`` on corrupt bytes)."""
        meta, arrays = unpack_state(blob, cls.FORMAT_TAG, cls.FORMAT_VERSION)
        config = meta["config"]
        window = config.pop("window")
        obj = cls(window, **config)
        obj.now = int(meta["now"])
        obj.n_samples = int(meta["n_samples"])
        obj._load_state(meta, arrays)
        return obj

    def _check_matrix(self, arr: np.ndarray, name: str) -> np.ndarray:
        if arr.shape != (self.config.depth, self.config.width):
            msg = f"array {name!r} has shape {arr.shape}"
            raise ValueError(msg)
        return arr

    # ---------------------------------------------------------------- subclass hooks
    def _init_state(self) -> None:
        raise NotImplementedError

    def _ingest(self, keys: np.ndarray, mix: bool, ticks: np.ndarray | None, first: int) -> None:
        """Add samples; ``ticks`` None means consecutive ticks from ``first`` (samples unit) or
        all at ``first`` (ticks unit)."""
        raise NotImplementedError

    def _advance_to(self, tick: int) -> None:
        raise NotImplementedError

    def _merge_state(self, other: Any) -> None:
        raise NotImplementedError

    def _state_meta(self) -> dict[str, Any]:
        return {}

    def _state_arrays(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _load_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self) or self.config != other.config:
            return False
        if (self.now, self.n_samples) != (other.now, other.n_samples):
            return False
        mine, theirs = self._state_arrays(), other._state_arrays()
        return mine.keys() == theirs.keys() and all(
            np.array_equal(mine[k], theirs[k]) for k in mine
        ) and self._state_meta() == other._state_meta()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in asdict(self.config).items())
        return f"{type(self).__name__}({fields})"


def tick_array(ticks: np.ndarray | None, first: int, k: int, unit: str) -> np.ndarray:
    """Materialize the ticks of ``k`` samples (see :meth:`WindowedCountMin._ingest`).

    Examples
    --------
    >>> tick_array(None, 5, 3, "samples").tolist()
    [5, 6, 7]
    """
    if ticks is not None:
        return ticks
    if unit == "samples":
        return np.arange(first, first + k, dtype=np.int64)
    return np.full(k, first, dtype=np.int64)


def first_at_or_after(ticks: np.ndarray | None, first: int, k: int, unit: str, t: int) -> int:
    """Index of the first sample whose tick is ``>= t`` (ticks sorted).

    Examples
    --------
    >>> first_at_or_after(None, 5, 3, "samples", 6)
    1
    """
    if ticks is not None:
        return int(np.searchsorted(ticks, t, side="left"))
    if unit == "samples":
        return int(min(max(t - first, 0), k))
    return 0 if first >= t else k

