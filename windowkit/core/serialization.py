"""Versioned, checksummed byte format shared by every stateful object in the core.

Layout (little endian)::

    b"WKIT" | u8 container version | 8-byte format tag | u16 format version
    | u32 crc32(body) | u64 len(body) | body
    body = u32 len(meta) | meta (JSON) | array bytes, in the order listed in meta["arrays"]

The JSON part carries parameters and scalars; arrays travel as raw bytes with dtype and
shape in the metadata. Every field is checked on read so that corrupt or foreign bytes raise
:class:`StateFormatError` (a ``ValueError``) with a clear message, never a numpy traceback.
"""

from __future__ import annotations

import functools
import json
import re
import struct
import zlib
from collections.abc import Callable, Collection
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from windowkit.core.factorize import factorize

MAGIC = b"WKIT"
CONTAINER_VERSION = 1
_HEADER = struct.Struct("<4sB8sHIQ")
_T = TypeVar("_T")


class StateFormatError(ValueError):
    """Raised when state bytes are corrupt, truncated or belong to another object."""


def state_decoder(decode: Callable[[type[_T], bytes], _T]) -> Callable[[type[_T], bytes], _T]:
    """Make a ``from_bytes`` classmethod fail only with :class:`StateFormatError` naming its class.

    Bytes can pass the header and checksum and still hold what the decoder cannot read (a
    missing key, a value of the wrong type, an array of the wrong dtype or shape). Any such
    failure becomes ``StateFormatError("<Class> state is corrupt: ...")``, chained to the
    original; a ``StateFormatError`` that does not name the class (e.g. from the header, or
    from a nested object's decoder) gets the class name in front. Apply it under
    ``@classmethod``.

    Parameters
    ----------
    decode : callable
        The ``from_bytes(cls, blob)`` function.

    Returns
    -------
    callable
        The wrapped function.

    Examples
    --------
    >>> class Demo:
    ...     @classmethod
    ...     @state_decoder
    ...     def from_bytes(cls, blob):
    ...         meta, _ = unpack_state(blob, "DEMO", 1)
    ...         return meta["n"]
    >>> Demo.from_bytes(pack_state("DEMO", 1, {"n": 3}))
    3
    >>> Demo.from_bytes(pack_state("DEMO", 1, {"m": 3}))
    Traceback (most recent call last):
    ...
    windowkit.core.serialization.StateFormatError: Demo state is corrupt: KeyError: 'n'
    """

    @functools.wraps(decode)
    def from_bytes(cls: type[_T], blob: bytes) -> _T:
        try:
            return decode(cls, blob)
        except StateFormatError as exc:
            if re.search(rf"\b{re.escape(cls.__name__)}\b", str(exc)):
                raise
            msg = f"{cls.__name__} state: {exc}"
            raise StateFormatError(msg) from exc
        except Exception as exc:  # any failure to decode, whatever raised it
            msg = f"{cls.__name__} state is corrupt: {type(exc).__name__}: {exc}"
            raise StateFormatError(msg) from exc

    from_bytes.decodes_state = True  # type: ignore[attr-defined]  # tests find undecorated ones
    return from_bytes


def pack_state(
    tag: str, version: int, meta: dict[str, Any], arrays: dict[str, np.ndarray] | None = None
) -> bytes:
    """Serialize parameters, scalars and numpy arrays under a format tag.

    Parameters
    ----------
    tag : str
        Up to 8 ASCII characters naming the object's format, e.g. ``"THRFRAME"``.
    version : int
        The object's own format version (0..65535).
    meta : dict
        JSON-serializable parameters and scalars.
    arrays : dict of str to numpy.ndarray, optional
        Numeric arrays, or arrays of strings (object or unicode dtype, stored as UTF-8) or of
        bytes (object dtype, stored as they are).

    Returns
    -------
    bytes

    Examples
    --------
    >>> import numpy as np
    >>> blob = pack_state("DEMO", 1, {"n": 3}, {"x": np.arange(3)})
    >>> meta, arrays = unpack_state(blob, "DEMO", 1)
    >>> meta["n"], arrays["x"].tolist()
    (3, [0, 1, 2])
    """
    arrays = arrays or {}
    specs = []
    chunks = []
    for name, arr in arrays.items():
        arr = np.asarray(arr)
        if arr.dtype == object or arr.dtype.kind == "U":
            # dictionary-encode: per-row strings cost a Python call each, distinct values few
            codes, uniques = factorize(arr.ravel())
            binary = len(uniques) > 0 and set(map(type, uniques)) <= {bytes, bytearray}
            if binary:  # bytes (a sketch's) as they are, not as text
                lengths = np.array([len(u) for u in uniques], dtype="<i8")
                text = b"".join(uniques)
            else:
                lengths, text = _utf8_strings(uniques)
            specs.append({"name": name, "dtype": "bytesdict" if binary else "utf8dict",
                          "shape": list(arr.shape), "n_unique": len(lengths)})
            chunks += [_raw_bytes(codes.astype("<i8")), _raw_bytes(lengths), text]
            continue
        arr = np.ascontiguousarray(arr)
        specs.append({"name": name, "dtype": arr.dtype.str, "shape": list(arr.shape)})
        chunks.append(_raw_bytes(arr))
    meta_bytes = json.dumps({"meta": meta, "arrays": specs}, separators=(",", ":")).encode()
    pieces = [struct.pack("<I", len(meta_bytes)), meta_bytes, *chunks]
    tag_bytes = tag.encode("ascii").ljust(8, b"\0")
    if len(tag_bytes) != 8:
        msg = f"`tag` must be at most 8 ASCII characters; got {tag!r}"
        raise ValueError(msg)
    # the checksum over the pieces, and the pieces copied once (a state of 5 M keys is half a
    # GB, and each concatenation of it costs a quarter of a second)
    crc = 0
    for piece in pieces:
        crc = zlib.crc32(piece, crc)
    length = sum(len(piece) for piece in pieces)  # _raw_bytes views are flat bytes
    header = _HEADER.pack(MAGIC, CONTAINER_VERSION, tag_bytes, version, crc, length)
    return b"".join([header, *pieces])


def state_tag(blob: bytes | bytearray | memoryview) -> str:
    """The format tag in the header of state bytes (which class wrote them).

    Parameters
    ----------
    blob : bytes
        Bytes of :func:`pack_state`.

    Returns
    -------
    str

    Raises
    ------
    StateFormatError
        If ``blob`` has no windowkit header.

    Examples
    --------
    >>> state_tag(pack_state("DEMO", 1, {}))
    'DEMO'
    """
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        msg = f"state must be bytes; got {type(blob).__name__}"
        raise StateFormatError(msg)
    view = _byte_view(blob)
    if len(view) < _HEADER.size:
        msg = f"state bytes are too short ({len(view)} bytes) to hold a windowkit header"
        raise StateFormatError(msg)
    magic, container, tag_bytes, *_ = _HEADER.unpack_from(view)
    if magic != MAGIC:
        msg = f"state bytes do not start with the windowkit magic {MAGIC!r} (got {magic!r})"
        raise StateFormatError(msg)
    if container != CONTAINER_VERSION:
        msg = f"unsupported windowkit container version {container}"
        raise StateFormatError(msg)
    return tag_bytes.rstrip(b"\0").decode("ascii", errors="replace")


def _byte_view(blob: bytes | bytearray | memoryview) -> memoryview:
    """A read-only view of ``blob``'s bytes: bytes of a nested state are not copied."""
    view = memoryview(blob)
    if view.ndim != 1 or view.format not in ("B", "b", "c") or not view.c_contiguous:
        view = memoryview(view.tobytes())
    return view.cast("B").toreadonly()


def _raw_bytes(arr: np.ndarray) -> memoryview:
    """The bytes of a contiguous array, without copying them."""
    return memoryview(arr.reshape(-1).view(np.uint8))


def unpack_state(
    blob: bytes, tag: str, version: int, *, versions: Collection[int] | None = None,
    copy: bool = True,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Check and decode bytes written by :func:`pack_state`.

    Parameters
    ----------
    blob : bytes
        The serialized state.
    tag : str
        The format tag the caller expects.
    version : int
        The caller's current format version.
    versions : collection of int, optional
        Every format version the caller's decoder really reads; default only ``version``.
        Bytes of any other version (older or newer) are refused.
    copy : bool, default True
        False: the arrays are read-only views of ``blob`` (for bytes of a nested state, which
        its own decoder copies anyway).

    Returns
    -------
    (dict, dict)
        The metadata and the arrays (fresh arrays; read-only views of ``blob`` if not
        ``copy``).

    Raises
    ------
    StateFormatError
        If the bytes are truncated, corrupt, of another format or of a version not read.

    Examples
    --------
    >>> unpack_state(b"nonsense", "DEMO", 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    windowkit.core.serialization.StateFormatError: state bytes are too short (8 bytes) ...
    >>> unpack_state(pack_state("DEMO", 1, {}), "DEMO", 2)
    Traceback (most recent call last):
    ...
    windowkit.core.serialization.StateFormatError: DEMO state has format version 1; this \
windowkit reads DEMO version 2 only
    """
    got_tag = state_tag(blob)
    blob = _byte_view(blob)
    *_, got_version, crc, length = _HEADER.unpack_from(blob)
    if got_tag != tag:
        msg = f"state bytes hold a {got_tag!r} object, not a {tag!r} object"
        raise StateFormatError(msg)
    readable = sorted({version} if versions is None else set(versions))
    if got_version not in readable:
        listed = ", ".join(str(v) for v in readable)
        which = f"version {listed} only" if len(readable) == 1 else f"versions {listed}"
        msg = (f"{tag} state has format version {got_version}; "
               f"this windowkit reads {tag} {which}")
        raise StateFormatError(msg)
    body = blob[_HEADER.size :]  # a view (_byte_view), not a copy of the state's bytes
    if len(body) != length:
        msg = f"{tag} state is truncated or padded: {len(body)} body bytes, header says {length}"
        raise StateFormatError(msg)
    if zlib.crc32(body) != crc:
        msg = f"{tag} state is corrupt: checksum mismatch"
        raise StateFormatError(msg)
    try:
        (meta_len,) = struct.unpack_from("<I", body)
        decoded = json.loads(bytes(body[4 : 4 + meta_len]))
        offset = 4 + meta_len
        arrays = {}
        for spec in decoded["arrays"]:
            if spec["dtype"] in ("utf8dict", "bytesdict"):
                arrays[spec["name"]], offset = _read_dict_strings(body, offset, spec, tag)
                continue
            dtype = np.dtype(spec["dtype"])
            count = int(np.prod(spec["shape"], dtype=np.int64))
            nbytes = count * dtype.itemsize
            if offset + nbytes > len(body):
                msg = f"{tag} state is truncated in array {spec['name']!r}"
                raise StateFormatError(msg)
            arr = np.frombuffer(body, dtype=dtype, count=count, offset=offset)
            arr = arr.reshape(spec["shape"])
            arrays[spec["name"]] = arr.copy() if copy else arr
            offset += nbytes
        return decoded["meta"], arrays
    except StateFormatError:
        raise
    except (ValueError, KeyError, TypeError, struct.error) as exc:
        msg = f"{tag} state is corrupt: {exc}"
        raise StateFormatError(msg) from exc


def _read_dict_strings(body: memoryview, offset: int, spec: dict,
                       tag: str) -> tuple[np.ndarray, int]:
    count = int(np.prod(spec["shape"], dtype=np.int64))
    n_unique = int(spec["n_unique"])
    if offset + 8 * (count + n_unique) > len(body):
        msg = f"{tag} state is truncated in array {spec['name']!r}"
        raise StateFormatError(msg)
    codes = np.frombuffer(body, dtype="<i8", count=count, offset=offset)
    offset += 8 * count
    lengths = np.frombuffer(body, dtype="<i8", count=n_unique, offset=offset)
    offset += 8 * n_unique
    if lengths.min(initial=0) < 0 or offset + int(lengths.sum()) > len(body):
        msg = f"{tag} state is truncated in array {spec['name']!r}"
        raise StateFormatError(msg)
    if codes.size and (codes.min() < -1 or codes.max() >= n_unique):
        msg = f"{tag} state is corrupt in array {spec['name']!r}: string code out of range"
        raise StateFormatError(msg)
    size = int(lengths.sum())
    uniques = np.empty(n_unique + 1, dtype=object)  # last slot: None, for code -1
    if spec["dtype"] == "bytesdict":
        ends = offset + np.cumsum(lengths)
        uniques[:n_unique] = [bytes(body[int(end - length):int(end)])
                              for end, length in zip(ends, lengths, strict=True)]
    else:
        uniques[:n_unique] = _decode_utf8(body, offset, lengths, spec["name"], tag)
    return uniques[codes].reshape(spec["shape"]), offset + size


def _utf8_strings(values: np.ndarray) -> tuple[np.ndarray, bytes]:
    """The UTF-8 bytes of ``str(v)`` for each value, as (lengths, the bytes one after the other).

    By Arrow's C++ when every value is exactly a ``str`` (a state's keys: a Python call each
    cost more than the rest of its state); value by value otherwise, since Arrow takes the
    text of a ``str`` subclass (an Enum's value) where ``str()`` may give another one.
    """
    if len(values) and set(map(type, values)) <= {str, np.str_}:
        strings = pa.array(values, type=pa.large_string())
        offsets = np.frombuffer(strings.buffers()[1], dtype="<i8")[: len(strings) + 1]
        start, end = int(offsets[0]), int(offsets[-1])
        text = strings.buffers()[2].slice(start, end - start).to_pybytes()
        return np.diff(offsets).astype("<i8"), text
    encoded = [str(v).encode("utf-8") for v in values]
    return np.array([len(e) for e in encoded], dtype="<i8"), b"".join(encoded)


def _decode_utf8(body: memoryview, offset: int, lengths: np.ndarray, name: str,
                 tag: str) -> np.ndarray:
    """Python strings of the UTF-8 pieces of ``lengths`` starting at ``offset``."""
    offsets = np.zeros(len(lengths) + 1, dtype="<i8")
    np.cumsum(lengths, out=offsets[1:])
    data = pa.py_buffer(body)[offset : offset + int(offsets[-1])]
    strings = pa.LargeStringArray.from_buffers(len(lengths), pa.py_buffer(offsets), data)
    try:
        strings.validate(full=True)
    except pa.ArrowInvalid as exc:
        msg = f"{tag} state is corrupt in array {name!r}: {exc}"
        raise StateFormatError(msg) from exc
    return strings.to_numpy(zero_copy_only=False)


_COMPRESSED_MAGIC = b"WKZS"
_COMPRESSED_HEADER = struct.Struct("<4sBQ")
_COMPRESSED_VERSION = 1
#: No state is this large: a size field beyond it is damage, not a size to allocate.
_LARGEST_STATE = 1 << 40


def compress_state(blob: bytes) -> bytes:
    """``blob`` (bytes of :func:`pack_state`) compressed with zstd, for storage.

    A state's arrays compress about tenfold at 0.6 GB/s, and a streaming state store moves
    its bytes at a small fraction of that (Spark's state API: 50 to 100 MB/s on one core).

    Parameters
    ----------
    blob : bytes
        The bytes to store.

    Returns
    -------
    bytes
        ``b"WKZS"``, a format version byte, the size of ``blob``, then a zstd frame.

    Examples
    --------
    >>> blob = pack_state("DEMO", 1, {"n": 3}, {"x": np.zeros(1000)})
    >>> stored = compress_state(blob)
    >>> len(stored) < len(blob), decompress_state(stored) == blob
    (True, True)
    """
    header = _COMPRESSED_HEADER.pack(_COMPRESSED_MAGIC, _COMPRESSED_VERSION, len(blob))
    return header + pa.compress(blob, codec="zstd", asbytes=True)


def decompress_state(stored: bytes | bytearray | memoryview) -> bytes | memoryview:
    """The bytes :func:`compress_state` was given, or ``stored`` itself if it did not write it.

    State stored uncompressed (by an older windowkit) starts with :func:`pack_state`'s magic,
    not with this one, and is returned as it is, to be checked by its decoder.

    Parameters
    ----------
    stored : bytes-like
        What was stored.

    Returns
    -------
    bytes or memoryview
        The state's bytes (a view of the decompressed buffer, not a copy of it).

    Raises
    ------
    StateFormatError
        If compressed bytes are truncated or corrupt.

    Examples
    --------
    >>> decompress_state(b"WKIT...") == b"WKIT..."
    True
    >>> decompress_state(compress_state(b"abc")[:-2])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    windowkit.core.serialization.StateFormatError: compressed state is corrupt: ...
    """
    view = _byte_view(stored)
    if view[:4] != _COMPRESSED_MAGIC:
        return stored
    if len(view) < _COMPRESSED_HEADER.size:
        msg = f"compressed state is truncated ({len(view)} bytes)"
        raise StateFormatError(msg)
    _, version, size = _COMPRESSED_HEADER.unpack_from(view)
    if version != _COMPRESSED_VERSION:
        msg = f"unsupported compressed state version {version}"
        raise StateFormatError(msg)
    if size > _LARGEST_STATE:
        msg = f"compressed state is corrupt: a size of {size} bytes"
        raise StateFormatError(msg)
    try:
        raw = pa.decompress(view[_COMPRESSED_HEADER.size:], decompressed_size=size,
                            codec="zstd", asbytes=False)
    except (OSError, MemoryError, pa.ArrowException) as exc:
        msg = f"compressed state is corrupt: {exc}"
        raise StateFormatError(msg) from exc
    if raw.size != size:
        msg = f"compressed state is corrupt: {raw.size} bytes, header says {size}"
        raise StateFormatError(msg)
    return memoryview(raw).cast("B")  # Arrow exports signed chars
