"""Strings that differ after a NUL character are distinct keys, items and stored strings.

pandas 2.x finds distinct strings with a hash table that stops at a string's first NUL, so
``"a"`` and ``"a\\x00b"`` were one key to a framer, one hash to a sketch and one string in a
stored state (pandas issue #34551). The reference here is a Python dict, which compares whole
strings.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkit.core import key_index
from windowkit.core.chunks import chunk_of
from windowkit.core.factorize import factorize
from windowkit.core.frames import ThresholdFramer
from windowkit.core.hashing import hash64, sip_hash
from windowkit.core.persistence import PersistentItemsSketch
from windowkit.core.serialization import pack_state, unpack_state

#: Few characters, NUL among them, so that prefixes up to a NUL often coincide.
NUL_TEXT = st.text(alphabet=["\x00", "a", "b", "é"], max_size=4)
VALUES = st.lists(st.one_of(NUL_TEXT, st.none(), st.just(float("nan"))), max_size=30)


def dict_factorize(values: list) -> tuple[list[int], list]:
    index: dict = {}
    codes = [-1 if pd.isna(v) else index.setdefault(v, len(index)) for v in values]
    return codes, list(index)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_factorize_finds_the_distinct_strings_of_a_python_dict(values):
    codes, uniques = factorize(np.array(values, dtype=object))
    assert (codes.tolist(), uniques.tolist()) == dict_factorize(values)


def test_factorize_of_other_values_is_pandas_factorize():
    for values in ([3, 1, 3], [1.5, np.nan, 1.5], ["x", 2, "x"], [b"a", "a", b"a"]):
        arr = np.array(values, dtype=object if isinstance(values[0], (str, bytes)) else None)
        codes, uniques = factorize(arr)
        expected_codes, expected_uniques = pd.factorize(arr, use_na_sentinel=True)
        assert codes.tolist() == expected_codes.tolist()
        assert list(uniques) == list(expected_uniques)


@settings(max_examples=200, deadline=None)
@given(st.lists(NUL_TEXT, min_size=1, max_size=30))
def test_string_hashes_are_one_per_distinct_string(values):
    arr = np.array(values, dtype=object)
    hashed = hash64(arr, seed=3)
    assert hashed.tolist() == hash64(arr, seed=3, categorize=False).tolist()
    distinct = {v: h for v, h in zip(values, hashed.tolist(), strict=True)}
    assert len(set(distinct.values())) == len(distinct)  # no two strings share a hash here
    assert (chunk_of(arr, 64) == chunk_of(arr, 64, unique=len(distinct) == len(values))).all()


def test_string_hashes_without_nul_are_pandas_hashes():
    arr = np.array(["x", "日本", "", "x", None], dtype=object)
    assert sip_hash(arr).tolist() == pd.util.hash_array(arr).tolist()


def test_keys_differing_after_a_nul_are_framed_apart():
    frames = ThresholdFramer("1 rows").process(pd.DataFrame({
        "time": [1, 1, 2, 2, 5, 5],
        "key": np.array(["a", "a\x00b", "a", "a\x00b", "a", "a\x00b"], dtype=object),
        "value": [True, True, True, False, False, False],
    }))
    assert sorted(zip(frames["key"], frames["n_tuples"], strict=True)) == [
        ("a", 2), ("a\x00b", 1)]


def test_items_differing_after_a_nul_are_counted_apart():
    sketch = PersistentItemsSketch(alpha=0.5, epsilon=0.25, n=8, seed=1)  # tau = 1: exact
    sketch.update(np.array(["a", "a\x00b", "c", "a", "a\x00b"], dtype=object), [0, 0, 0, 1, 1])
    assert sorted(sketch.persistent_items()["item"].tolist()) == ["a", "a\x00b"]


def test_stored_strings_keep_what_follows_a_nul():
    arr = np.array(["", "\x00", "a", "a\x00b"], dtype=object)
    _, arrays = unpack_state(pack_state("DEMO", 1, {}, {"s": arr}), "DEMO", 1)
    assert arrays["s"].tolist() == arr.tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=6), st.none()), max_size=20))
def test_stored_bytes_stay_bytes_and_keep_what_follows_a_nul(values):
    """A column of bytes (a snapshot's sketches in a runner's buffer) comes back as the same
    bytes, not as text, whatever NULs they hold."""
    arr = np.array(values + [b"\x00", b"\x00\x01"], dtype=object)
    _, arrays = unpack_state(pack_state("DEMO", 1, {}, {"b": arr}), "DEMO", 1)
    assert arrays["b"].tolist() == arr.tolist()
    assert all(v is None or type(v) is bytes for v in arrays["b"])


@settings(max_examples=200, deadline=None)
@given(start=st.lists(NUL_TEXT, unique=True, max_size=8),
       batches=st.lists(st.lists(NUL_TEXT, unique=True, max_size=12), max_size=8),
       small=st.sampled_from([0, 2, 1024]))
def test_key_slots_are_those_of_a_python_dict(start, batches, small):
    # a tiny merge threshold rebuilds the hash table every few keys
    with mock.patch.object(key_index, "_SMALL", small):
        index = key_index.KeyIndex(np.array(start, dtype=object))
        reference = {k: i for i, k in enumerate(start)}
        for batch in batches:
            slots = index.slots(np.array(batch, dtype=object))
            assert slots.tolist() == [reference.setdefault(k, len(reference)) for k in batch]
        assert index.keys == list(reference)
        assert index.array().tolist() == list(reference)
