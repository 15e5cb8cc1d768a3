"""Persistent items (issue 4): exactness against the definitions and the paper's pseudo-code.

Hypothesis streams are lists of ``(item, slot)`` sorted by slot. Parameters come from a dyadic
grid (alpha, epsilon in quarters/eighths, n a multiple of 8) so that ``alpha n``, ``(alpha -
epsilon) n`` and ``T`` are exact in floating point and the paper's float comparisons can be
transcribed literally.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from windowkit.core.hashing import hash64
from windowkit.core.persistence import (
    ExactPersistence,
    PersistentItemsSketch,
    SlidingPersistentItemsSketch,
)
from windowkit.core.persistence import _kernels as K
from windowkit.core.persistence._cores import FixedCore
from windowkit.reference import persistence as ref

SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def streams(draw, max_slots=24, max_items=6, strings=None, max_rows=120):
    """A sorted stream over slots ``0 .. n_slots - 1`` plus its ``n_slots``."""
    n_slots = draw(st.integers(1, max_slots))
    use_strings = draw(st.booleans()) if strings is None else strings
    pool = [f"10.0.0.{i}" for i in range(max_items)] if use_strings else list(range(max_items))
    rows = draw(st.lists(st.tuples(st.sampled_from(pool), st.integers(0, n_slots - 1)),
                         max_size=max_rows))
    rows.sort(key=lambda r: r[1])
    return rows, n_slots


PARAMS = st.sampled_from([
    (1.0, 0.5, 8), (0.75, 0.25, 8), (0.5, 0.25, 16), (0.5, 0.125, 16), (0.75, 0.5, 24),
    (0.25, 0.125, 16), (1.0, 0.125, 8), (0.5, 0.25, 24), (0.75, 0.125, 24),
])


def as_arrays(rows):
    items = [r[0] for r in rows]
    slots = np.array([r[1] for r in rows], dtype=np.int64)
    return items, slots


def hash_oracle(sketch, rows, instance=0):
    """``h`` as an exact fraction in [0, 1), and ``tau`` as the fraction the code compares to."""
    items, slots = as_arrays(rows)
    values = sketch.sample_hash(items, slots, instance) if rows else []
    table = {(d, t): Fraction(int(v), 2**64) for (d, t), v in zip(rows, values, strict=False)}
    thr, all_pass = sketch.config.sample_threshold
    tau = Fraction(2) if all_pass else Fraction(thr, 2**64)
    return (lambda d, t: table[(d, t)]), tau


def test_int_hash_kernel_matches_core_hash64():
    values = np.array([0, 1, -1, 2**62, -(2**63), 123456789], dtype=np.int64)
    for seed in (0, 1, 2**64 - 1, 12345):
        sk = PersistentItemsSketch(alpha=0.5, epsilon=0.1, n=10, seed=seed)
        assert (K.hash_int64(values, sk._seed_mix) == hash64(values, seed=seed)).all()


def late_row_numpy(slots, now, lateness):
    """The order check as numpy's running maximum (the definition ``scan_slots`` fuses)."""
    ref = np.maximum(now, np.concatenate([[now], np.maximum.accumulate(slots)[:-1]]))
    bad = np.flatnonzero(slots < ref - lateness)
    return (int(bad[0]), int(ref[bad[0]])) if bad.size else (-1, max(now, int(slots.max())))


SLOT_LISTS = st.lists(st.integers(-5, 40), min_size=1, max_size=60)


@SETTINGS
@given(st.one_of(SLOT_LISTS, SLOT_LISTS.map(sorted)), st.integers(0, 3),
       st.one_of(st.none(), st.integers(-5, 40)))
@example(slots=[3, 1, 2], lateness=2, now=None)  # out of order, none late: bounds by scan
def test_scan_slots_kernel_is_the_running_maximum_check(slots, lateness, now):
    # sorted batches take the kernel's vectorized path, the others its running maximum
    arr = np.array(slots, dtype=np.int64)
    start = int(arr[0]) if now is None else now
    row, ref, lo, hi = K.scan_slots(arr, np.int64(start), np.int64(lateness))
    assert (int(row), int(ref)) == late_row_numpy(arr, start, lateness)
    if row == -1:
        assert (int(lo), int(hi)) == (int(arr.min()), int(arr.max()))


@pytest.mark.parametrize("all_pass", [False, True])
def test_fixed_core_tells_apart_keys_sharing_tag_and_home_slot(all_pass):
    # a sampling instance's word table stores only the high 32 bits of a key: give 40 keys the
    # same high bits and the same home slot, so every lookup walks a chain of tag matches
    rng = np.random.default_rng(5)
    keys = (np.uint64(0xDEADBEEF) << np.uint64(32)) | (
        np.arange(40, dtype=np.uint64) * np.uint64(1 << 16) + np.uint64(5))
    slots = np.sort(rng.integers(0, 30, 400))
    idx = rng.integers(0, 40, 400)
    want: dict[int, tuple[int, int]] = {}
    for k, t in zip(idx.tolist(), slots.tolist(), strict=True):
        count, last = want.get(k, (0, -1))
        want[k] = (count + (t > last), t)
    # thr = 2**64 - 1 samples every row, yet all_pass=False keeps the sampling path
    core = FixedCore(2**64 - 1, all_pass, 7, "int")
    for lo in range(0, idx.size, 64):  # several batches, so the table grows in between
        core.update(keys[idx[lo:lo + 64]], slots[lo:lo + 64], idx[lo:lo + 64])
    for state in (core.canonical(), _reloaded(core, all_pass).canonical()):
        got = {int(v): (int(c), int(t)) for v, c, t in
               zip(state["value"], state["count"], state["last"], strict=True)}
        assert got == want


def _reloaded(core, all_pass):
    other = FixedCore(core.thr, all_pass, core.salt, "int")
    other.load(core.canonical())
    return other


@SETTINGS
@given(streams(), st.booleans())
def test_exact_matches_definition(data, sliding):
    rows, n_slots = data
    window = max(1, n_slots // 2) if sliding else n_slots
    ex = ExactPersistence(window, window="sliding" if sliding else "fixed")
    ex.update(*as_arrays(rows))
    end = rows[-1][1] if rows else 0
    left = end - window + 1 if sliding else 0
    got = dict(zip(ex.persistence().item, ex.persistence().persistence, strict=False))
    assert got == ref.persistence(rows, left, end if sliding else window - 1)
    if sliding:  # and after the window slid past the end
        later = end + window // 2 + 1
        ex.advance(later)
        got = dict(zip(ex.persistence().item, ex.persistence().persistence, strict=False))
        assert got == ref.persistence(rows, later - window + 1, later)
        assert ex.num_tuples == sum(got.values())


@SETTINGS
@given(streams(), PARAMS, st.integers(0, 3))
def test_fixed_sketch_is_algorithm_2_and_3(data, params, seed):
    rows, n_slots = data
    alpha, eps, n = params
    n_slots = min(n_slots, n)
    rows = [r for r in rows if r[1] < n_slots]
    sk = PersistentItemsSketch(alpha=alpha, epsilon=eps, n=n, seed=seed)
    sk.update(*as_arrays(rows))
    h, tau = hash_oracle(sk, rows)
    want = ref.paper_fixed_sketch(rows, h, tau)
    core = sk._cores[0].canonical() if rows else {"value": [], "count": [], "last": []}
    columns = zip(core["value"], core["count"], core["last"], strict=True)
    got = {d: (int(c), int(t)) for d, c, t in columns}
    assert got == want
    report = ref.paper_fixed_report(want, sk.tau, sk.threshold)
    out = sk.persistent_items()
    assert dict(zip(out.item, out.estimate, strict=False)) == report


@SETTINGS
@given(streams(), PARAMS, st.integers(0, 3), st.integers(0, 12))
def test_sliding_sketch_is_algorithms_5_to_7(data, params, seed, extra):
    rows, _ = data
    alpha, eps, n = params
    n = max(2, n // 4)  # windows shorter than the stream, so tuples expire
    eps = min(eps, alpha / 2)
    sk = SlidingPersistentItemsSketch(alpha=alpha, epsilon=eps, n=n, seed=seed)
    sk.update(*as_arrays(rows))
    if not rows:
        assert sk.persistent_items().empty
        return
    current = rows[-1][1] + extra
    sk.advance(current)
    h, tau = hash_oracle(sk, rows)
    want = ref.paper_sliding_sketch(rows, h, tau, n, current)
    lengths = sk._cores[0].canonical()
    owners = np.repeat(lengths["value"], lengths["length"])
    columns = zip(owners, lengths["tslot"], lengths["tcount"], strict=True)
    got = {(d, int(t)): int(c) for d, t, c in columns}
    assert got == {k: v[0] for k, v in want.items()}
    assert sk.num_tuples == len(want)
    report = ref.paper_sliding_report(want, sk.tau, sk.threshold, n, current)
    out = sk.persistent_items()
    assert dict(zip(out.item, out.estimate, strict=False)) == pytest.approx(report)
    assert set(out.item) == set(report)


@SETTINGS
@given(streams(max_slots=40), PARAMS, st.integers(0, 2**32), st.sampled_from([None, 0.01]))
def test_no_item_below_alpha_minus_epsilon_is_ever_reported(data, params, seed, delta):
    """Lemmas 3.2 and 3.5: deterministic, every seed, every slot of the sliding window."""
    rows, n_slots = data
    alpha, eps, n = params
    bound = (Fraction(repr(alpha)) - Fraction(repr(eps))) * n
    fixed = PersistentItemsSketch(alpha=alpha, epsilon=eps, n=max(n, n_slots), seed=seed,
                                  delta=delta)
    fixed.update(*as_arrays(rows))
    p = ref.persistence(rows, 0, max(n, n_slots) - 1)
    bound_fixed = (Fraction(repr(alpha)) - Fraction(repr(eps))) * max(n, n_slots)
    assert all(p[d] >= bound_fixed for d in fixed.persistent_items().item)
    sliding = SlidingPersistentItemsSketch(alpha=alpha, epsilon=eps, n=n, seed=seed, delta=delta)
    for c in range(n_slots):
        now = [r for r in rows if r[1] == c]
        sliding.update(*as_arrays(now)) if now else sliding.advance(c)
        p = ref.persistence(rows, c - n + 1, c)
        assert all(p[d] >= bound for d in sliding.persistent_items().item)


@SETTINGS
@given(streams(max_rows=60), PARAMS, st.integers(0, 9))
def test_estimates_never_exceed_persistence_plus_one_over_tau(data, params, seed):
    rows, n_slots = data
    alpha, eps, n = params
    sk = SlidingPersistentItemsSketch(alpha=alpha, epsilon=eps, n=n, seed=seed, delta=0.001)
    sk.update(*as_arrays(rows))
    if rows:
        c = rows[-1][1]
        p = ref.persistence(rows, c - n + 1, c)
        out = sk.persistent_items()
        assert all(e <= p[d] + 1 / sk.tau for d, e in zip(out.item, out.estimate, strict=False))


def test_tau_one_reports_exactly_the_items_above_alpha_minus_epsilon():
    # eps n = 2 makes tau = 1: every (d, t) is sampled, so the sketch is exact
    rng = np.random.default_rng(5)
    rows = sorted(((int(d), int(t)) for d, t in zip(rng.integers(0, 30, 400),
                                                      rng.integers(0, 40, 400), strict=False)),
                  key=lambda r: r[1])
    sk = SlidingPersistentItemsSketch(alpha=0.5, epsilon=0.25, n=8)
    sk.update(*as_arrays(rows))
    p = ref.persistence(rows, 32, 39)
    out = sk.persistent_items()
    want = {d: v + 1.0 for d, v in p.items() if v >= 2}
    assert dict(zip(out.item, out.estimate, strict=True)) == want
