"""How the Spark adapter stores a shard's state (issue #17): compressed, readable when stored
uncompressed by an older windowkit, and strings encoded in the very bytes they always had.

The strings of a state (a framer's keys) are encoded by Arrow instead of a Python loop; the
bytes must not change, or checkpoints written before would no longer be read: the reference
below is the loop the encoder had, written out again.
"""

from __future__ import annotations

import enum
import hashlib
import struct
import zlib

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkit.core.frames import ThresholdFramer
from windowkit.core.operator import EventTimeRunner
from windowkit.core.serialization import (
    _HEADER,
    StateFormatError,
    compress_state,
    decompress_state,
    pack_state,
    unpack_state,
)
from windowkit.spark.processor import RunnerProcessor

TEXT = st.one_of(st.none(), st.text(max_size=6),
                 st.sampled_from(["é", "日本", "", "a", "a\x00b", "\x00"]))


def old_string_chunk(values: np.ndarray) -> bytes:
    """The ``utf8dict`` array bytes as the per-string loop wrote them (distinct values in order
    of first appearance, None and NaN as code -1), with strings compared whole: pandas'
    ``factorize`` merged ``""`` and ``"\\x00"`` (pandas issue #34551)."""
    index: dict = {}
    codes = np.array([-1 if pd.isna(v) else index.setdefault(v, len(index)) for v in values],
                     dtype=np.int64)
    encoded = [str(v).encode("utf-8") for v in index]
    lengths = np.array([len(e) for e in encoded], dtype="<i8")
    return codes.astype("<i8").tobytes() + lengths.tobytes() + b"".join(encoded)


def array_bytes(blob: bytes) -> bytes:
    """The bytes after the JSON part of a one-array :func:`pack_state` blob."""
    body = blob[_HEADER.size:]
    (meta_len,) = struct.unpack_from("<I", body)
    return body[4 + meta_len:]


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, max_size=40))
def test_strings_are_stored_in_the_bytes_of_the_per_string_loop(values):
    arr = np.array(values, dtype=object)
    blob = pack_state("DEMO", 1, {}, {"s": arr})
    assert array_bytes(blob) == old_string_chunk(arr)
    _, arrays = unpack_state(blob, "DEMO", 1)
    assert arrays["s"].tolist() == arr.tolist()


@pytest.mark.parametrize(("values", "decoded"), [
    ([1, "a", 2.5, 1], ["1", "a", "2.5", "1"]),
    ([b"ab", "ab"], ["b'ab'", "ab"]),          # bytes are not their text
    ([None, float("nan")], [None, None]),      # no string at all
    ([""], [""]),
    ([], []),
])
def test_values_that_are_not_all_strings_are_stored_as_their_text(values, decoded):
    arr = np.array(values, dtype=object)
    blob = pack_state("DEMO", 1, {}, {"s": arr})
    assert array_bytes(blob) == old_string_chunk(arr)
    _, arrays = unpack_state(blob, "DEMO", 1)
    assert arrays["s"].tolist() == decoded


def test_invalid_utf8_in_stored_strings_is_a_format_error():
    blob = pack_state("DEMO", 1, {}, {"s": np.array(["ab"], dtype=object)})
    body = blob[_HEADER.size:].replace(b"ab", b"\xff\xfe")
    # a valid checksum for the damaged body, so that the strings themselves are decoded
    bad = blob[:_HEADER.size - 12] + struct.pack("<IQ", zlib.crc32(body), len(body)) + body
    with pytest.raises(StateFormatError, match="corrupt in array 's'"):
        unpack_state(bad, "DEMO", 1)


def _runner() -> EventTimeRunner:
    runner = EventTimeRunner(ThresholdFramer("2 rows"))
    rows = pd.DataFrame({"key": [f"k{i % 50}" for i in range(500)], "time": np.arange(500),
                         "value": np.arange(500) % 3 == 0})
    runner.push(rows, watermark=400)
    return runner


def test_compressed_state_round_trips_and_is_smaller():
    blob = _runner().to_bytes()
    stored = compress_state(blob)
    assert len(stored) < len(blob) / 2
    assert decompress_state(stored) == blob


class Kind(str, enum.Enum):  # noqa: UP042 - a StrEnum's str() is its value; not this one's
    A = "a"


#: sha256 (first 32 hex digits) of ``pack_state("COMPAT", 1, {"name": name}, {"a": array})``
#: as the encoder of commit d1efded wrote it: checkpoints of that version must stay readable
#: and the bytes written now must be those bytes.
COMPAT_DIGESTS = {
    "str_enum": "9735fb71f85a5f363922c48e22261d6e",
    "unicode_2d": "f0153e18a6b57ea09ee772ea64ff6cc6",
    "non_contiguous": "690bbb54aa88b493fe3bcd5dfca5ed50",
    "big_endian": "5d7b47914f6d0da57d22257dee6bf372",
    "zero_d": "877c26866f2633f8cf40dd900e22a738",
    "bools": "285cfd18dac5d4f5ea7c0ce6821fd142",
    "datetimes": "9c6409db84b8f0cae2cd825821f35424",
    "mixed_objects": "6573b6f9fd4c4c9c9b2484322e26e806",
    "fortran": "59b16b94a18da20acb65701d17add800",
    "empty": "194d0a60ea0f11e7ba3db590ff846532",
    "empty_strings": "f918d916efb951e25595ebc2277d1831",
}


def compat_arrays() -> dict[str, np.ndarray]:
    return {
        "str_enum": np.array([Kind.A, "a", None], dtype=object),
        "unicode_2d": np.array([["x", "é"], ["日本", "x"]]),
        "non_contiguous": np.arange(20, dtype=np.int64)[::3],
        "big_endian": np.arange(5, dtype=">i4"),
        "zero_d": np.array(2.5),
        "bools": np.array([True, False, True]),
        "datetimes": np.array(["2024-01-01T00:00:00", "NaT"], dtype="datetime64[us]"),
        "mixed_objects": np.array([None, float("nan"), b"ab", 3, "s", 3], dtype=object),
        "fortran": np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3)),
        "empty": np.zeros((0, 3), dtype=np.int32),
        "empty_strings": np.array([], dtype=object),
    }


@pytest.mark.parametrize("name", sorted(COMPAT_DIGESTS))
def test_arrays_are_stored_in_the_bytes_of_the_previous_encoder(name):
    blob = pack_state("COMPAT", 1, {"name": name}, {"a": compat_arrays()[name]})
    assert hashlib.sha256(blob).hexdigest()[:32] == COMPAT_DIGESTS[name]


@pytest.mark.parametrize("damage", [
    lambda s: s[:-3],                              # truncated
    lambda s: s[:16] + bytes(len(s) - 16),         # zeroed frame
    lambda s: s[:5] + struct.pack("<Q", 7) + s[13:],  # wrong size in the header
    lambda s: s[:4] + b"\x09" + s[5:],             # unknown version
    lambda s: s[:10],                              # shorter than the header
    lambda s: s[:5] + struct.pack("<Q", 1 << 62) + s[13:],  # a size no state has
])
def test_damaged_compressed_state_is_a_format_error(damage):
    with pytest.raises(StateFormatError, match="compressed state"):
        decompress_state(damage(compress_state(_runner().to_bytes())))


class _State:
    def __init__(self, value=None) -> None:
        self.value = value

    def get(self):
        return self.value

    def update(self, value) -> None:
        self.value = value


class _Handle:
    def listTimers(self):
        return iter(())

    def registerTimer(self, ms) -> None:
        pass


def _processor(state: _State) -> RunnerProcessor:
    processor = RunnerProcessor(lambda: ThresholdFramer("2 rows"), ["value"], "value",
                                 None, [0])
    processor.state, processor.handle = state, _Handle()
    return processor


def test_the_adapter_stores_state_compressed_and_reads_it_back():
    runner = _runner()
    state = _State()
    _processor(state)._save(runner)
    stored = bytes(state.value[0])
    assert stored.startswith(b"WKZS") and len(stored) < len(runner.to_bytes())
    assert _processor(state)._load().to_bytes() == runner.to_bytes()


def test_the_adapter_reads_state_an_older_windowkit_stored_uncompressed():
    runner = _runner()
    loaded = _processor(_State((runner.to_bytes(),)))._load()
    assert loaded.to_bytes() == runner.to_bytes()


def test_the_adapter_starts_a_fresh_runner_without_state():
    assert _processor(_State())._load().buffered_rows == 0
