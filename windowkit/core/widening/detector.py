"""The detector contract: a class with one method that takes a window's rows, returns matches.

The operator encodes each row once, when it arrives, with :meth:`Detector.encode` (an int64
matrix: one row per record), keeps those encoded rows as its state and hands each window's rows
to :meth:`Detector.detect` in event-time order. A match is a tuple of row positions inside the
window; the operator turns positions into row identities (key, time, ordinal among equal times)
to report each match once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from windowkit.core.registry import lookup, name_of_old_path, register_plugin, registered_name
from windowkit.core.serialization import StateFormatError

Match = tuple[int, ...]
"""Positions of a match's rows inside the window (in the detector's own order)."""


class Detector(ABC):
    """A pattern detector run on every window.

    Subclasses implement :meth:`detect`. They may override :meth:`encode` (default: the columns
    named in ``columns``, as int64) and :meth:`detect_windows` (default: :meth:`detect` on each
    window; override it to process many windows in one compiled call). A detector must be a
    pure function of the window's rows: the same rows give the same matches.

    To be stored in operator state, a detector describes itself with :meth:`to_spec` (JSON) and
    is rebuilt by ``cls.from_spec``; the defaults handle detectors whose only parameter is
    ``columns``. State bytes name the class by its name in windowkit's registry
    (:mod:`windowkit.core.registry`): a subclass registers itself when defined, and its state
    can be read where it is defined.

    Examples
    --------
    >>> class Rising(Detector):
    ...     columns = ("value",)
    ...     def detect(self, window):
    ...         v = window[:, 0]
    ...         return [(i, i + 1) for i in range(len(v) - 1) if v[i + 1] > v[i]]
    >>> Rising().detect(np.array([[1], [3], [2]]))
    [(0, 1)]
    """

    columns: ClassVar[tuple[str, ...]] = ()
    #: The logical type of the input ``columns`` (:data:`windowkit.core.operator.INPUT_TYPES`):
    #: integers by default; ``"category"`` for text the detector hashes or compares by value.
    column_type: ClassVar[str] = "int64"

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        register_plugin(cls)  # state bytes name the class; see windowkit.core.registry
    #: Index of an encoded column that is 0 exactly for rows that can take no part in a match
    #: and whose presence changes no match (e.g. calls an episode never names): the operator
    #: then gives the detector each window's other rows only, in order (positions refer to
    #: them). None: every row is given.
    relevance: ClassVar[int | None] = None

    @property
    def required_bits(self) -> int:
        """Bits of the relevance column that a window's rows must hold together (OR) for the
        window to hold a match; windows missing one are not given to :meth:`detect_windows`.
        0 (default): every window with a relevant row is given."""
        return 0

    @abstractmethod
    def detect(self, window: np.ndarray) -> list[Match]:
        """Matches in one window: ``window`` has one int64 row per record, in time order."""

    @property
    def width(self) -> int:
        """Columns of the encoded rows."""
        return len(self.columns)

    def encode(self, rows: pd.DataFrame) -> np.ndarray:
        """Encode a batch's rows as an int64 matrix (one row per record).

        Examples
        --------
        >>> class D(Detector):
        ...     columns = ("a", "b")
        ...     def detect(self, window):
        ...         return []
        >>> D().encode(pd.DataFrame({"a": [1, 2], "b": [3, 4]})).tolist()
        [[1, 3], [2, 4]]
        """
        if not self.columns:
            return np.zeros((len(rows), 0), dtype=np.int64)
        missing = [c for c in self.columns if c not in rows]
        if missing:
            msg = f"the detector needs column(s) {missing}; the rows have {list(rows.columns)}"
            raise ValueError(msg)
        return np.column_stack([rows[c].to_numpy(dtype=np.int64) for c in self.columns])

    def detect_windows(
        self, rows: np.ndarray, starts: np.ndarray, stops: np.ndarray
    ) -> tuple[np.ndarray, list[Match]]:
        """Matches in many windows ``rows[starts[i]:stops[i]]``.

        Returns
        -------
        (numpy.ndarray, list of tuple)
            The window index of each match, and the matches (positions within their window).

        Examples
        --------
        >>> class Pairs(Detector):
        ...     def detect(self, window):
        ...         return [(0, 1)] if len(window) >= 2 else []
        >>> idx, matches = Pairs().detect_windows(np.zeros((5, 0)), np.array([0, 2]),
        ...                                       np.array([1, 5]))
        >>> idx.tolist(), matches
        ([1], [(0, 1)])
        """
        index: list[int] = []
        matches: list[Match] = []
        for i, (a, b) in enumerate(zip(starts.tolist(), stops.tolist(), strict=True)):
            for m in self.detect(rows[a:b]):
                index.append(i)
                matches.append(tuple(int(p) for p in m))
        return np.asarray(index, dtype=np.int64), matches

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters, for the operator's state."""
        return {}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> Detector:
        """Rebuild a detector from :meth:`to_spec` output."""
        return cls(**spec)


def detector_name(detector: Detector) -> str:
    """The registry name of a detector's class, as stored in state.

    Examples
    --------
    >>> from windowkit.core.widening.episode_detector import EpisodeDetector
    >>> detector_name(EpisodeDetector("execve"))
    'EpisodeDetector'
    """
    return registered_name(type(detector))


def resolve_detector(name: str, spec: dict[str, Any]) -> Detector:
    """Rebuild a detector from its registry name (older bytes: its class path) and spec;
    :class:`StateFormatError` if no such detector is registered.

    Examples
    --------
    >>> resolve_detector("builtins:dict", {})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    windowkit.core.serialization.StateFormatError: state names detector 'builtins.dict', ...
    """
    cls = lookup(name_of_old_path(name), Detector, "detector")
    try:
        return cls.from_spec(spec)
    except (TypeError, ValueError, KeyError) as exc:
        msg = f"state holds a detector spec that {name!r} rejects: {exc}"
        raise StateFormatError(msg) from exc
