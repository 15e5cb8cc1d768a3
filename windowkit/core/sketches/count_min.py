"""The vanilla Count-Min sketch (Cormode and Muthukrishnan), the base of the windowed variants."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from windowkit.core.registry import register
from windowkit.core.serialization import pack_state, state_decoder, unpack_state
from windowkit.core.sketches import _hashing
from windowkit.core.sketches._hashing import HASH_FAMILIES, SPARK_MAX_SEED, HashFamily
from windowkit.core.validation import check_choice, check_in_range, check_int


@dataclass(frozen=True)
class CountMinConfig:
    """Shape and seed of a Count-Min count matrix.

    Parameters
    ----------
    depth : int
        Number of rows ``c1`` (one hash function each), ``ceil(log2(1/delta))``.
    width : int
        Number of columns ``c2``, ``ceil(e/epsilon)``.
    seed : int
        Selects the hash functions; sketches merge only with an equal seed.
    hashing : {"multiply-shift", "spark"}
        The hash family (:mod:`windowkit.core.sketches._hashing`): seeded multiply-shift, or
        Spark's own ``CountMinSketch`` (seed at most ``2**31 - 1``), whose matrices the JVM
        builds cell for cell alike. Sketches merge only within one family.

    Examples
    --------
    >>> CountMinConfig.from_error(0.01, 0.5)
    CountMinConfig(depth=1, width=272, seed=0, hashing='multiply-shift')
    """

    depth: int
    width: int
    seed: int = 0
    hashing: HashFamily = "multiply-shift"

    def __post_init__(self) -> None:
        check_int("depth", self.depth, 1, 64)
        check_int("width", self.width, 1, 2**31 - 1)
        check_choice("hashing", self.hashing, HASH_FAMILIES)
        check_int("seed", self.seed, 0, SPARK_MAX_SEED if self.hashing == "spark" else 2**63 - 1)

    @staticmethod
    def from_error(epsilon: float, delta: float, seed: int = 0,
                   hashing: HashFamily = "multiply-shift") -> CountMinConfig:
        """Rows ``ceil(log2(1/delta))`` and columns ``ceil(e/epsilon)`` (paper, Section 2.2).

        Examples
        --------
        >>> CountMinConfig.from_error(0.001, 1 / 16).depth
        4
        """
        check_in_range("epsilon", epsilon, 0, 1, low_open=True, high_open=True)
        check_in_range("delta", delta, 0, 1, low_open=True, high_open=True)
        depth = max(1, math.ceil(math.log2(1.0 / delta) - 1e-12))
        width = math.ceil(math.e / epsilon)
        return CountMinConfig(depth=depth, width=width, seed=seed, hashing=hashing)

    def columns(self, items: Any) -> np.ndarray:
        """Column ``h_r(item)`` of every item in every row, shape ``(depth, n)``.

        Examples
        --------
        >>> CountMinConfig(2, 28, seed=1).columns(["a", "b", "c"]).shape
        (2, 3)
        """
        keys, mix = _hashing.prepare(items, self)
        return _hashing.columns(keys, mix, self)


def check_compatible(self_cfg: Any, other_cfg: Any, kind: str) -> None:
    """Raise a ``ValueError`` showing both configurations unless they are equal."""
    if self_cfg != other_cfg:
        msg = (
            f"cannot merge `other`: incompatible {kind} configuration: "
            f"self has {self_cfg!r}, other has {other_cfg!r}"
        )
        raise ValueError(msg)


def estimate_counts(counts: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Row-wise minimum of ``counts`` at ``cols``, rounded and clipped at 0, as int64.

    Examples
    --------
    >>> import numpy as np
    >>> estimate_counts(np.array([[3.0, 1.4], [2.0, 5.0]]), np.array([[0, 1], [0, 1]])).tolist()
    [2, 1]
    """
    if cols.shape[1] == 0:
        return np.zeros(0, dtype=np.int64)
    rows = np.arange(counts.shape[0])[:, None]
    low = counts[rows, cols].min(axis=0)
    if low.dtype.kind == "f":
        low = np.rint(low)
    return np.maximum(low, 0).astype(np.int64)


@register()
class CountMin:
    """Vanilla Count-Min sketch over the whole stream (Listing 2.1).

    Guarantee: ``f_j <= estimate(j)`` always, and ``estimate(j) <= f_j + epsilon * (m - f_j)``
    with probability at least ``1 - delta``, where ``m`` is the stream length,
    ``epsilon = e / width`` and ``delta = 2**-depth``.

    Counts are int64; :meth:`from_counts` also accepts a float matrix (e.g. the current cell
    values of a windowed sketch), so a coordinator can merge snapshots of any variant (DistCM).

    Parameters
    ----------
    depth, width, seed : int
        See :class:`CountMinConfig`.
    hashing : {"multiply-shift", "spark"}
        The hash family, see :class:`CountMinConfig`.

    Examples
    --------
    >>> cm = CountMin.from_error(epsilon=0.01, delta=0.25, seed=3)
    >>> cm.update(["a", "b", "a", 7])
    >>> cm.estimate(["a", "b", 7]).tolist()
    [2, 1, 1]
    """

    FORMAT_TAG = "CMVANILA"
    FORMAT_VERSION = 1

    def __init__(self, depth: int, width: int, seed: int = 0,
                 hashing: HashFamily = "multiply-shift") -> None:
        self.config = CountMinConfig(depth, width, seed, hashing)
        self.counts = np.zeros((depth, width), dtype=np.int64)
        self.n_samples = 0

    @classmethod
    def from_error(cls, epsilon: float, delta: float, seed: int = 0,
                   hashing: HashFamily = "multiply-shift") -> CountMin:
        """A sketch sized for error ``epsilon`` with probability ``1 - delta``.

        Examples
        --------
        >>> CountMin.from_error(0.01, 0.5).width
        272
        """
        cfg = CountMinConfig.from_error(epsilon, delta, seed, hashing)
        return cls(cfg.depth, cfg.width, cfg.seed, cfg.hashing)

    @classmethod
    def from_counts(
        cls, config: CountMinConfig, counts: np.ndarray, n_samples: int = 0
    ) -> CountMin:
        """Wrap an existing ``(depth, width)`` count matrix (int64 or float64).

        Examples
        --------
        >>> import numpy as np
        >>> cm = CountMin.from_counts(CountMinConfig(1, 4), np.array([[0.0, 2.6, 0.0, 1.0]]))
        >>> cm.counts.dtype.name
        'float64'
        """
        counts = np.asarray(counts)
        if counts.shape != (config.depth, config.width) or counts.dtype.kind not in "if":
            msg = f"`counts` must be a numeric array of shape {(config.depth, config.width)}"
            raise ValueError(msg)
        cm = cls(config.depth, config.width, config.seed, config.hashing)
        kind = np.float64 if counts.dtype.kind == "f" else np.int64
        cm.counts = np.array(counts, dtype=kind)
        cm.n_samples = int(n_samples)
        return cm

    depth = property(lambda self: self.config.depth, doc="Number of rows.")
    width = property(lambda self: self.config.width, doc="Number of columns.")
    seed = property(lambda self: self.config.seed, doc="Hash seed.")

    @property
    def epsilon(self) -> float:
        """The relative error ``e / width``."""
        return math.e / self.config.width

    @property
    def delta(self) -> float:
        """The failure probability ``2**-depth``."""
        return 2.0 ** -self.config.depth

    def is_empty(self) -> bool:
        """True if nothing was added."""
        return self.n_samples == 0 and not self.counts.any()

    def update(self, items: Any) -> None:
        """Add a batch of items (integers or strings), each with weight one."""
        keys, mix = _hashing.prepare(items, self.config)
        _hashing.add(keys, mix, self.config, self.counts, 1)
        self.n_samples += int(keys.size)

    def estimate(self, items: Any) -> np.ndarray:
        """Estimated frequency of every item (int64, never below the true count)."""
        return estimate_counts(self.counts, self.config.columns(items))

    def upper_bound(self, items: Any) -> np.ndarray:
        """Equal to :meth:`estimate`: the estimate never underestimates."""
        return self.estimate(items)

    def lower_bound(self, items: Any) -> np.ndarray:
        """``estimate - epsilon * n_samples`` clipped at 0 (holds with probability 1 - delta)."""
        est = self.estimate(items)
        return np.maximum(est - math.floor(self.epsilon * self.n_samples), 0)

    def merge(self, other: CountMin) -> None:
        """Add ``other``'s counts into this sketch (same shape and seed required)."""
        if other is self:
            msg = "cannot merge `other`: a sketch cannot be merged with itself"
            raise ValueError(msg)
        if not isinstance(other, CountMin):
            msg = f"`other` must be a CountMin; got {type(other).__name__}"
            raise ValueError(msg)
        check_compatible(self.config, other.config, "CountMin")
        if other.counts.dtype.kind == "f" and self.counts.dtype.kind != "f":
            self.counts = self.counts.astype(np.float64)
        self.counts += other.counts
        self.n_samples += other.n_samples

    def memory_bytes(self) -> int:
        """Bytes held by the count matrix."""
        return int(self.counts.nbytes)

    def to_bytes(self) -> bytes:
        """Serialize configuration and counts."""
        meta = {"config": asdict(self.config), "n_samples": self.n_samples}
        return pack_state(self.FORMAT_TAG, self.FORMAT_VERSION, meta, {"counts": self.counts})

    @classmethod
    @state_decoder
    def from_bytes(cls, blob: bytes) -> CountMin:
        """Rebuild a sketch from :meth:`to_bytes` output.

        Examples
        --------
        >>> cm = CountMin(2, 8, seed=1)
        >>> cm.update([1, 2, 2])
        >>> CountMin.from_bytes(cm.to_bytes()).estimate([2]).tolist()
        [2]
        """
        meta, arrays = unpack_state(blob, cls.FORMAT_TAG, cls.FORMAT_VERSION)
        cfg = CountMinConfig(**meta["config"])
        return cls.from_counts(cfg, arrays["counts"], meta["n_samples"])

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, CountMin)
            and self.config == other.config
            and self.n_samples == other.n_samples
            and np.array_equal(self.counts, other.counts)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"CountMin(depth={self.depth}, width={self.width}, seed={self.seed}, "
                f"hashing={self.config.hashing!r})")
