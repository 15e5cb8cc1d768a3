"""Slot numbers of an operator's keys, looked up a batch at a time.

An operator with per-key state keeps it in arrays indexed by a slot number, one slot per key
in order of first appearance. A batch brings up to millions of distinct keys; looking each one
up in a Python dict cost about a microsecond a key, more than the framing itself. Here the keys
sit in a pandas hash table (one vectorized lookup per batch), and the keys added since it was
built in a small dict, so that adding a few keys does not rebuild the table: it is rebuilt
once that dict holds a quarter as many keys as the table (amortized O(1) a key).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from windowkit.core.serialization import StateFormatError

__all__ = ["KeyIndex"]

#: The dict of recent keys is merged into the hash table beyond this many keys and beyond a
#: quarter of the table.
_SMALL = 1024


class KeyIndex:
    """Keys numbered 0, 1, 2, ... in order of first appearance.

    Keys compare as Python objects (a string is equal only to the same string, whatever NUL
    characters it holds; an integer key equals the same integer of any integer type).

    Parameters
    ----------
    keys : iterable
        Distinct keys already numbered, in slot order (a repeated key raises
        :class:`~windowkit.core.serialization.StateFormatError`: they come from state bytes).

    Examples
    --------
    >>> index = KeyIndex(["a", "b"])
    >>> index.slots(np.array(["b", "c"], dtype=object)).tolist()
    [1, 2]
    >>> len(index), index.keys
    (3, ['a', 'b', 'c'])
    """

    def __init__(self, keys: Iterable = ()) -> None:
        self.keys: list = keys.tolist() if isinstance(keys, np.ndarray) else list(keys)
        self._table: pd.Index | None = None  # the first len(self._table) keys
        self._recent: dict = {}  # the keys after those, with their slots
        self._array: np.ndarray | None = None
        if self.keys:  # keys of a stored state: the table slots() needs anyway, checked
            self._table = pd.Index(self.array(), dtype=object, copy=False)
            if not self._table.is_unique:
                msg = "state holds the same key in two slots"
                raise StateFormatError(msg)

    def __len__(self) -> int:
        return len(self.keys)

    def array(self) -> np.ndarray:
        """The keys as an object array, in slot order (kept until a key is added).

        Examples
        --------
        >>> KeyIndex([3, "x"]).array().tolist()
        [3, 'x']
        """
        if self._array is None or len(self._array) != len(self.keys):
            self._array = np.empty(len(self.keys), dtype=object)
            self._array[:] = self.keys
        return self._array

    def slots(self, unique_keys: np.ndarray) -> np.ndarray:
        """The slot of each of ``unique_keys`` (distinct), numbering the new ones after the
        others in the order given.

        Examples
        --------
        >>> index = KeyIndex()
        >>> index.slots(np.array([7, 5])).tolist(), index.slots(np.array([5, 9])).tolist()
        ([0, 1], [1, 2])
        """
        query = np.asarray(unique_keys)
        query = query if query.dtype == object else query.astype(object)
        held_in_table = 0 if self._table is None else len(self._table)
        uncovered = len(self.keys) != held_in_table + len(self._recent)  # keys given at start
        if uncovered or len(self._recent) > max(_SMALL, held_in_table // 4):
            self._table = pd.Index(self.array(), dtype=object, copy=False)
            self._recent = {}
        if self._table is None or not len(self._table):
            found = np.full(len(query), -1, dtype=np.int64)
        else:
            found = self._table.get_indexer(query).astype(np.int64, copy=False)
        missing = np.flatnonzero(found < 0)
        if len(missing):
            recent, keys = self._recent, self.keys
            for at, key in zip(missing.tolist(), query[missing].tolist(), strict=True):
                slot = recent.get(key)
                if slot is None:
                    slot = recent[key] = len(keys)
                    keys.append(key)
                found[at] = slot
        return found
