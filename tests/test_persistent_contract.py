"""Persistent items (issue 4): the contract every stateful core object keeps.

Lateness, duplicates, merge of item-disjoint shards (equal to the whole stream's sketch),
and clear errors on bad input; round trips, split invariance and merge laws are in the
contract suite (tests/test_contract.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkit.core.persistence import (
    ExactPersistence,
    PersistentItemsSketch,
    SlidingPersistentItemsSketch,
)

SETTINGS = settings(max_examples=40, deadline=None)
N = 16


def make(kind: str, **kw):
    if kind == "fixed":
        return PersistentItemsSketch(alpha=0.5, epsilon=0.25, n=N, seed=11, **kw)
    if kind == "sliding":
        return SlidingPersistentItemsSketch(alpha=0.5, epsilon=0.25, n=N // 2, seed=11,
                                            delta=0.05, **kw)
    return ExactPersistence(N // 2, window="sliding", **kw)


KINDS = st.sampled_from(["fixed", "sliding", "exact"])


@st.composite
def sorted_streams(draw, max_rows=150):
    strings = draw(st.booleans())
    pool = [f"h{i}" for i in range(12)] if strings else list(range(12))
    n = draw(st.integers(0, max_rows))
    items = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
    slots = sorted(draw(st.lists(st.integers(0, N - 1), min_size=n, max_size=n)))
    return np.array(items, dtype=object if strings else np.int64), np.array(slots, np.int64)


def feed(sketch, items, slots, cuts):
    bounds = [0, *sorted(cuts), len(items)]
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        sketch.update(items[lo:hi], slots[lo:hi])


def report(sketch):
    if isinstance(sketch, ExactPersistence):
        return sketch.persistence().values.tolist()
    return sketch.persistent_items().values.tolist()


@SETTINGS
@given(KINDS, sorted_streams(), st.integers(1, 3), st.integers(0, 2**16),
       st.lists(st.integers(0, 150), max_size=4))
def test_disorder_within_allowed_lateness_gives_the_sorted_result(kind, stream, lateness,
                                                                  seed, cuts):
    items, slots = stream
    jitter = np.random.default_rng(seed).integers(0, lateness + 1, size=len(slots))
    order = np.argsort(slots + jitter, kind="stable")  # each row <= lateness behind the max
    late = make(kind, allowed_lateness=lateness)
    feed(late, items[order], slots[order], [c for c in cuts if c <= len(items)])
    ordered = make(kind)
    ordered.update(items, slots)
    assert report(late) == report(ordered)
    # once the lateness horizon has passed, the state itself is the sorted stream's
    if kind != "fixed" and len(slots):
        late.advance(int(slots.max()) + lateness)
        ordered.advance(int(slots.max()) + lateness)
        for a, b in zip(late._cores, ordered._cores, strict=False):
            pairs = zip(a.canonical().items(), b.canonical().items(), strict=True)
            for (ka, va), (kb, vb) in pairs:
                assert ka == kb and va.tolist() == vb.tolist()


@SETTINGS
@given(KINDS, sorted_streams(), st.integers(0, 2**16))
def test_duplicates_within_a_slot_never_change_the_state(kind, stream, seed):
    items, slots = stream
    rng = np.random.default_rng(seed)
    repeat = rng.integers(1, 4, size=len(items))
    once, many = make(kind), make(kind)
    once.update(items, slots)
    many.update(np.repeat(items, repeat), np.repeat(slots, repeat))
    assert many.to_bytes() == once.to_bytes()


@SETTINGS
@given(KINDS, sorted_streams(), st.integers(2, 4))
def test_merge_of_item_disjoint_shards_equals_the_whole(kind, stream, shards):
    items, slots = stream
    whole = make(kind)
    whole.update(items, slots)
    keys = np.array([sum(map(ord, str(v))) % shards for v in items], dtype=np.int64)
    parts = []
    for s in range(shards):
        part = make(kind)
        part.update(items[keys == s], slots[keys == s])
        parts.append(part)
    merged = make(kind)
    for part in parts:
        merged.merge(part)
    assert merged.to_bytes() == whole.to_bytes()
    assert report(merged) == report(whole)


def test_merge_refuses_itself_other_configs_and_shared_items():
    a, b = make("fixed"), make("fixed")
    a.update([1, 2], [0, 1])
    b.update([2], [0])
    with pytest.raises(ValueError, match="itself"):
        a.merge(a)
    with pytest.raises(ValueError, match="Incompatible sketch configuration.*alpha"):
        a.merge(PersistentItemsSketch(alpha=0.6, epsilon=0.25, n=N, seed=11))
    with pytest.raises(ValueError, match="Incompatible sketch configuration"):
        a.merge(PersistentItemsSketch(alpha=0.5, epsilon=0.25, n=N, seed=12))
    tau_one = PersistentItemsSketch(alpha=0.5, epsilon=0.125, n=N, seed=11)  # tau = 1
    other = PersistentItemsSketch(alpha=0.5, epsilon=0.125, n=N, seed=11)
    tau_one.update([1, 2], [0, 1])
    other.update([2], [0])
    with pytest.raises(ValueError, match="item-disjoint"):
        tau_one.merge(other)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": 0.0}, r"`alpha` must be in \(0, 1\]; got 0.0"),
        ({"alpha": 1.5}, r"`alpha` must be in \(0, 1\]; got 1.5"),
        ({"epsilon": 0.0}, r"`epsilon` must be in \(0, 1\]; got 0.0"),
        ({"epsilon": 1.5}, r"`epsilon` must be in \(0, 1\]; got 1.5"),
        ({"epsilon": 0.5}, r"`epsilon` must be smaller than `alpha`; got epsilon=0.5"),
        ({"epsilon": 0.7}, r"`epsilon` must be smaller than `alpha`"),
        ({"n": 0}, r"`n` must be an integer in \[1, inf\); got 0"),
        ({"n": 2.5}, r"`n` must be an integer"),
        ({"delta": 1.0}, r"`delta` must be in \(0, 1\); got 1.0"),
        ({"allowed_lateness": 10}, r"`allowed_lateness` must be an integer in \[0, 9\]"),
        ({"seed": -1}, r"`seed` must be an integer"),
    ],
)
@pytest.mark.parametrize("cls", [PersistentItemsSketch, SlidingPersistentItemsSketch])
def test_bad_parameters_name_the_parameter(cls, kwargs, match):
    params = {"alpha": 0.5, "epsilon": 0.1, "n": 10, **kwargs}
    with pytest.raises(ValueError, match=match):
        cls(**params)


@pytest.mark.parametrize("kind", ["fixed", "sliding", "exact"])
def test_bad_rows(kind):
    sk = make(kind)
    sk.update([1, 2], [3, 5])
    with pytest.raises(ValueError, match=r"`slots` went backwards beyond the allowed lateness "
                                         r"\(0 slots\): slot 4 arrived after slot 5"):
        sk.update([1], [4])
    with pytest.raises(ValueError, match=r"`slots` went backwards.*slot 5 arrived after slot 7"):
        sk.update([1, 1, 1], [6, 7, 5])
    with pytest.raises(ValueError, match="`items` must be integers like the earlier items"):
        sk.update(["a"], [9])
    with pytest.raises(ValueError, match="`items` and `slots` must have the same length"):
        sk.update([1, 2], [9])
    with pytest.raises(ValueError, match="`slots` must be integers"):
        sk.update([1], [9.5])
    late = make(kind, allowed_lateness=2)
    late.update([1], [10])
    late.update([1], [8])
    with pytest.raises(ValueError, match=r"allowed lateness \(2 slots\): slot 7 arrived after"):
        late.update([1], [7])


def test_fixed_window_range_and_advance_backwards():
    sk = PersistentItemsSketch(alpha=0.5, epsilon=0.1, n=10, start=100)
    with pytest.raises(ValueError, match=r"`slots` must lie in the fixed window .* "
                                         r"\[100, 110\); got 110"):
        sk.update([1, 1], [105, 110])
    sliding = SlidingPersistentItemsSketch(alpha=0.5, epsilon=0.1, n=10)
    sliding.update([1], [5])
    with pytest.raises(ValueError, match="`slot` must not be before the current slot 5; got 4"):
        sliding.advance(4)


@pytest.mark.parametrize("kind", ["fixed", "sliding", "exact"])
def test_corrupt_or_foreign_bytes(kind):
    sk = make(kind)
    sk.update(["a", "b", "a"], [0, 1, 2])
    blob = bytearray(sk.to_bytes())
    blob[-3] ^= 0xFF
    with pytest.raises(ValueError, match="corrupt: checksum mismatch"):
        type(sk).from_bytes(bytes(blob))
    with pytest.raises(ValueError, match="truncated"):
        type(sk).from_bytes(sk.to_bytes()[:-5])
    with pytest.raises(ValueError, match="too short"):
        type(sk).from_bytes(b"WKIT")
    other = PersistentItemsSketch if kind != "fixed" else SlidingPersistentItemsSketch
    with pytest.raises(ValueError, match="object, not a"):
        other.from_bytes(sk.to_bytes())
    with pytest.raises(ValueError, match="must be bytes"):
        type(sk).from_bytes("text")


def test_parameters_and_empty_state():
    sk = PersistentItemsSketch(alpha=0.5, epsilon=0.1, n=200, delta=0.001)
    assert (sk.tau, sk.threshold, sk.instances) == (0.1, 90.0, 4)
    assert sk.is_empty() and sk.num_tuples == 0 and sk.persistent_items().empty
    sk.update([], [])
    assert sk.is_empty()
    sk.update(np.arange(1000), np.zeros(1000, dtype=np.int64))
    assert not sk.is_empty() and sk.memory_bytes() > 0
    assert 0 < sk.num_tuples < 4 * 1000
