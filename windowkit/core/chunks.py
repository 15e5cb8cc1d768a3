"""Per-key state cut into chunks of keys, so an engine can store, load and rewrite only the
chunks a batch touches.

An operator whose state is a union of independent per-key parts (``KEY_PARTITIONED``, see
:class:`~windowkit.core.operator.StreamOperator`) exposes that state as a table: the keys, and
arrays whose first axis runs over them. :func:`chunk_of` assigns every key a chunk (a seeded
hash modulo the chunk count, the same in every process); :func:`encode_chunks` cuts the table
into one compressed, checksummed blob per chunk, with the table's layout checked by a
fingerprint rather than repeated in every chunk (a chunk of 32 keys is about a kilobyte);
:func:`decode_chunks` reads any set of such blobs back into one table.

A key may also own a variable number of elements (a list per key, as the sliding persistent
items sketch keeps): the table then has a per-key count ``arrays[COUNT]`` and flat arrays named
``"...[]"`` holding each key's elements in key order, which travel with their key.

The encoding is vectorized over chunks: one sort of the keys by chunk, one take per array, then
a slice per chunk and array, so cutting a state into a thousand chunks costs milliseconds.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable

import numpy as np
import pandas as pd

from windowkit.core.hashing import hash64
from windowkit.core.serialization import (
    StateFormatError,
    _decode_utf8,
    _utf8_strings,
    compress_state,
    decompress_state,
)

#: Seed of the chunk hash; part of the stored state's layout, never to change.
CHUNK_SEED = 0x5EED_C4A2
_MAGIC = b"WKCK"
_VERSION = 1
# magic, version, key kind (0: str, 1: int64), keys, layout fingerprint
_HEADER = struct.Struct("<4sBBIIx")
_CRC = struct.Struct("<I")
_STR_KEYS, _INT_KEYS = 0, 1
#: The per-key element count of a table with flat per-key lists (arrays named ``"...[]"``).
COUNT = "#"


def _is_flat(name: str) -> bool:
    return name.endswith("[]")


def chunk_of(keys: np.ndarray | pd.Series | pd.Categorical, chunks: int,
             unique: bool = False) -> np.ndarray:
    """The chunk of each key in ``[0, chunks)``: a seeded 64-bit hash of the key modulo
    ``chunks``, the same in every process.

    A Categorical is hashed per category, not per row. Integer keys hash as integers, other
    keys by their text. ``unique=True`` says the keys are distinct, which spares finding the
    distinct ones first (a quarter of the time on distinct text keys).

    Examples
    --------
    >>> chunk_of(np.array(["a", "b", "a"], dtype=object), 1).tolist()
    [0, 0, 0]
    >>> ids = chunk_of(pd.Categorical(["x", "y", "x"]), 8)
    >>> bool(ids[0] == ids[2]) and bool(((0 <= ids) & (ids < 8)).all())
    True
    >>> bool((chunk_of(pd.Categorical(["x"]), 8) == chunk_of(np.array(["x"], object), 8)).all())
    True
    """
    if chunks == 1:
        return np.zeros(len(keys), dtype=np.int64)
    if isinstance(keys, pd.Series) and isinstance(keys.dtype, pd.CategoricalDtype):
        keys = keys.array
    if isinstance(keys, pd.Categorical):
        per_category = chunk_of(np.asarray(keys.categories), chunks)
        return per_category[np.asarray(keys.codes)]  # keys are never null here
    values = keys.to_numpy() if isinstance(keys, pd.Series) else np.asarray(keys)
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    if values.dtype.kind not in "iu":
        values = values.astype(object)
    hashes = hash64(values, seed=CHUNK_SEED, categorize=not unique)
    return (hashes % np.uint64(chunks)).astype(np.int64)


def layout_of(arrays: dict[str, np.ndarray]) -> bytes:
    """The layout of a key table's arrays (names, dtypes, shapes past the key axis) as bytes.

    Examples
    --------
    >>> layout_of({"n": np.zeros((0, 2), np.int64)})
    b'n:<i8:2'
    """
    return ";".join(f"{name}:{arr.dtype.str}:{','.join(map(str, arr.shape[1:]))}"
                    for name, arr in sorted(arrays.items())).encode()


def encode_chunks(keys: np.ndarray, arrays: dict[str, np.ndarray],
                  chunk_ids: np.ndarray) -> dict[int, bytes]:
    """One stored blob per chunk holding the keys of that chunk and their rows of ``arrays``.

    Parameters
    ----------
    keys : numpy.ndarray
        The keys: int64, or objects (stored as text, like the operators' own ``to_bytes``).
    arrays : dict of str to numpy.ndarray
        Per-key state; each array's first axis runs over ``keys``.
    chunk_ids : numpy.ndarray
        The chunk of each key (:func:`chunk_of`).

    Returns
    -------
    dict of int to bytes
        Chunk -> compressed, checksummed blob, for the chunks that hold a key; within a chunk
        the keys keep their order in ``keys``.

    Examples
    --------
    >>> keys = np.array(["a", "b", "c"], dtype=object)
    >>> blobs = encode_chunks(keys, {"n": np.array([1, 2, 3])}, np.array([4, 0, 4]))
    >>> sorted(blobs)
    [0, 4]
    >>> k, a = decode_chunks([blobs[4]], {"n": np.zeros(0, np.int64)})
    >>> k.tolist(), a["n"].tolist()
    (['a', 'c'], [1, 3])
    """
    n = len(keys)
    if not n:
        return {}
    order = np.argsort(chunk_ids, kind="stable")
    sorted_ids = np.asarray(chunk_ids)[order]
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(sorted_ids)) + 1, [n]]).tolist()
    integer = np.asarray(keys).dtype.kind in "iu"
    if integer:
        key_bytes = np.ascontiguousarray(np.asarray(keys, dtype=np.int64)[order])
        lengths = key_offsets = None
    else:
        text_lengths, text = _utf8_strings(np.asarray(keys, dtype=object)[order])
        key_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(text_lengths, out=key_offsets[1:])
        key_bytes = np.frombuffer(text, dtype=np.uint8)
        lengths = text_lengths.astype(np.uint32)
    fingerprint = zlib.crc32(layout_of(arrays))
    columns = [np.ascontiguousarray(arrays[name][order])
               for name in sorted(arrays) if not _is_flat(name)]
    flat, flat_bounds = _flat_in_order(arrays, order)
    kind = _INT_KEYS if integer else _STR_KEYS
    blobs = {}
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        parts = [_HEADER.pack(_MAGIC, _VERSION, kind, hi - lo, fingerprint)]
        if integer:
            parts.append(key_bytes[lo:hi].data)
        else:
            parts.append(lengths[lo:hi].data)
            parts.append(key_bytes[key_offsets[lo]:key_offsets[hi]].data)
        parts.extend(column[lo:hi].data for column in columns)
        parts.extend(elements[flat_bounds[lo]:flat_bounds[hi]].data for elements in flat)
        body = b"".join(parts)
        blobs[int(sorted_ids[lo])] = compress_state(body + _CRC.pack(zlib.crc32(body)))
    return blobs


def _flat_in_order(arrays: dict[str, np.ndarray],
                   order: np.ndarray) -> tuple[list[np.ndarray], list[int]]:
    """The flat arrays (sorted by name) with their elements in the key order ``order``, and
    where each key's elements start in them (one more entry: the end)."""
    names = [name for name in sorted(arrays) if _is_flat(name)]
    if not names:
        return [], []
    counts = np.asarray(arrays[COUNT], dtype=np.int64)
    starts = np.cumsum(counts) - counts
    taken = counts[order]
    bounds = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(taken, out=bounds[1:])
    # element j of the reordered arrays: key order[i]'s element (j - bounds[i])
    index = np.arange(bounds[-1]) + np.repeat(starts[order] - bounds[:-1], taken)
    return [np.ascontiguousarray(arrays[name][index]) for name in names], bounds.tolist()


def decode_chunks(blobs: Iterable[bytes | memoryview],
                  template: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The keys and arrays of the chunks ``blobs``, concatenated in the order given.

    Parameters
    ----------
    blobs : iterable of bytes-like
        Blobs of :func:`encode_chunks`.
    template : dict of str to numpy.ndarray
        Arrays with the layout the chunks were written with (any number of keys, e.g. none):
        their names, dtypes and shapes past the key axis.

    Returns
    -------
    keys : numpy.ndarray
        int64, or objects (``str``).
    arrays : dict of str to numpy.ndarray
        Writable arrays, one row per key.

    Raises
    ------
    StateFormatError
        If a blob is truncated or corrupt, of another format or version, or written with
        another layout.

    Examples
    --------
    >>> decode_chunks([b"WKCK" + bytes(20)], {})
    Traceback (most recent call last):
    ...
    windowkit.core.serialization.StateFormatError: state chunk is truncated or corrupt \
(checksum mismatch)
    """
    names = [name for name in sorted(template) if not _is_flat(name)]
    flat_names = [name for name in sorted(template) if _is_flat(name)]
    shapes = [template[name].shape[1:] for name in names]
    dtypes = [template[name].dtype for name in names]
    widths = [dtype.itemsize * int(np.prod(shape, dtype=np.int64))
              for dtype, shape in zip(dtypes, shapes, strict=True)]
    flat_widths = [template[name].dtype.itemsize for name in flat_names]
    count_at = names.index(COUNT) if flat_names else None
    fingerprint = zlib.crc32(layout_of(template))
    kinds, counts, key_parts, length_parts = set(), [], [], []
    column_parts: list[list[memoryview]] = [[] for _ in names]
    flat_parts: list[list[memoryview]] = [[] for _ in flat_names]
    for blob in blobs:
        view = _checked(decompress_state(blob))
        _, version, kind, n, stored_print = _HEADER.unpack_from(view)
        if version != _VERSION:
            msg = f"unsupported state chunk version {version}"
            raise StateFormatError(msg)
        if stored_print != fingerprint or kind not in (_STR_KEYS, _INT_KEYS):
            msg = ("state chunk was written with another state layout (another windowkit "
                   "version or operator); restart the query on a new checkpoint")
            raise StateFormatError(msg)
        kinds.add(kind)
        at = _HEADER.size
        if kind == _INT_KEYS:
            key_parts.append(view[at:at + 8 * n])
            at += 8 * n
        else:
            lengths = np.frombuffer(view[at:at + 4 * n], dtype=np.uint32)
            at += 4 * n
            length_parts.append(lengths)
            text = int(lengths.sum(dtype=np.int64))
            key_parts.append(view[at:at + text])
            at += text
        for parts, width in zip(column_parts, widths, strict=True):
            parts.append(view[at:at + n * width])
            at += n * width
        if count_at is not None:
            elements = int(np.frombuffer(column_parts[count_at][-1],
                                         dtype=dtypes[count_at]).sum())
            for parts, width in zip(flat_parts, flat_widths, strict=True):
                parts.append(view[at:at + elements * width])
                at += elements * width
        if at != len(view) - _CRC.size:
            msg = f"state chunk holds {len(view) - _CRC.size - at} bytes more than its keys"
            raise StateFormatError(msg)
        counts.append(n)
    if len(kinds) > 1:
        msg = "state chunks mix integer and text keys"
        raise StateFormatError(msg)
    total = sum(counts)
    arrays = {}
    for name, dtype, shape, parts in zip(names, dtypes, shapes, column_parts, strict=True):
        flat = np.frombuffer(b"".join(parts), dtype=dtype) if total else np.zeros(0, dtype)
        arrays[name] = flat.reshape((total, *shape)).copy()
    for name, parts in zip(flat_names, flat_parts, strict=True):
        arrays[name] = np.frombuffer(b"".join(parts), dtype=template[name].dtype).copy()
    if kinds == {_INT_KEYS}:
        keys = np.frombuffer(b"".join(key_parts), dtype=np.int64).copy()
    elif total:
        lengths = np.concatenate(length_parts).astype("<i8")
        keys = _decode_utf8(memoryview(b"".join(key_parts)), 0, lengths, "keys", "chunk")
        keys = keys.astype(object)
    else:
        keys = np.zeros(0, dtype=object)
    return keys, arrays


def _checked(view: bytes | memoryview) -> memoryview:
    view = memoryview(view).cast("B") if not isinstance(view, memoryview) else view
    if (len(view) < _HEADER.size + _CRC.size or view[:4] != _MAGIC
            or _CRC.unpack_from(view, len(view) - _CRC.size)[0]
            != zlib.crc32(view[:len(view) - _CRC.size])):
        msg = "state chunk is truncated or corrupt (checksum mismatch)"
        raise StateFormatError(msg)
    return view
