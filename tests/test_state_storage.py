"""How the Spark adapter stores a shard's state (issue #17): compressed, readable when stored
uncompressed by an older windowkit, and strings encoded in the very bytes they always had.

The strings of a state (a framer's keys) are encoded by Arrow instead of a Python loop; the
bytes must not change, or checkpoints written before would no longer be read: the reference
below is the loop the encoder had, written out again.
"""

from __future__ import annotations

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
from windowkit.spark.adapter import _RunnerProcessor

TEXT = st.one_of(st.none(), st.text(max_size=6), st.sampled_from(["é", "日本", "", "a\x00b"]))


def old_string_chunk(values: np.ndarray) -> bytes:
    """The ``utf8dict`` array bytes as the per-string loop wrote them."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    encoded = [str(v).encode("utf-8") for v in uniques]
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


@pytest.mark.parametrize("damage", [
    lambda s: s[:-3],                              # truncated
    lambda s: s[:16] + bytes(len(s) - 16),         # zeroed frame
    lambda s: s[:5] + struct.pack("<Q", 7) + s[13:],  # wrong size in the header
    lambda s: s[:4] + b"\x09" + s[5:],             # unknown version
    lambda s: s[:10],                              # shorter than the header
])
def test_damaged_compressed_state_is_a_format_error(damage):
    with pytest.raises(StateFormatError):
        EventTimeRunner.from_bytes(decompress_state(damage(compress_state(_runner().to_bytes()))))


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


def _processor(state: _State) -> _RunnerProcessor:
    processor = _RunnerProcessor(lambda: ThresholdFramer("2 rows"), ["value"], "value",
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
