"""Windowed Count-Min variants against the eager references of the paper's listings (issue 3)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkit.core.sketches import (
    CountMin,
    CountMinConfig,
    PerfectWindowCM,
    ProportionalWindowCM,
    SimpleWindowCM,
    SplitterWindowCM,
    _hashing,
)
from windowkit.reference.count_min import (
    EagerPerfect,
    EagerProportional,
    EagerSimple,
    exact_window_counts,
)
from windowkit.reference.splitter import EagerSplitter

LINEAR = (PerfectWindowCM, SimpleWindowCM, ProportionalWindowCM)
ALL = (*LINEAR, SplitterWindowCM)
EAGER = {
    PerfectWindowCM: EagerPerfect,
    SimpleWindowCM: EagerSimple,
    ProportionalWindowCM: EagerProportional,
}
FAST = settings(max_examples=60, deadline=None, derandomize=True)


@st.composite
def scenarios(draw, max_len: int = 160):
    """A random stream, window, matrix shape, unit, ticks and batch cuts."""
    alphabet = draw(st.integers(1, 12))
    items = draw(st.lists(st.integers(0, alphabet - 1), max_size=max_len))
    window = draw(st.integers(1, 30))
    unit = draw(st.sampled_from(["samples", "ticks"]))
    ticks = None
    if unit == "ticks":
        ticks = sorted(draw(st.lists(st.integers(0, 3 * window + 4), min_size=len(items),
                                     max_size=len(items))))
    cuts = sorted(draw(st.lists(st.integers(0, len(items)), max_size=4)))
    hashing = draw(st.sampled_from(["multiply-shift", "spark"]))
    return {
        "items": np.array(items, dtype=np.int64),
        "ticks": None if ticks is None else np.array(ticks, dtype=np.int64),
        "window": window,
        "depth": draw(st.integers(1, 3)),
        "width": draw(st.integers(1, 8)),
        "seed": draw(st.integers(0, 2**31 - 1 if hashing == "spark" else 2**32)),
        "hashing": hashing,
        "unit": unit,
        "cuts": cuts,
        "extra": draw(st.integers(0, 2 * window)) if unit == "ticks" else 0,
        "tau": draw(st.sampled_from([0.01, 0.05, 0.2, 0.5, 1.0])),
        "mu": draw(st.sampled_from([0.9, 1.0, 1.3, 1.5, 2.5])),
    }


def build(cls, sc, cuts=None):
    params = {"tau": sc["tau"], "mu": sc["mu"]} if cls is SplitterWindowCM else {}
    sketch = cls(sc["window"], depth=sc["depth"], width=sc["width"], seed=sc["seed"],
                 unit=sc["unit"], hashing=sc["hashing"], **params)
    cuts = sc["cuts"] if cuts is None else cuts
    bounds = [0, *cuts, len(sc["items"])]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        if sc["unit"] == "ticks":
            sketch.update(sc["items"][a:b], ticks=sc["ticks"][a:b])
        else:
            sketch.update(sc["items"][a:b])
    if sc["extra"]:
        sketch.advance_ticks(sc["extra"])
    return sketch


def run_eager(ref, sc, cols):
    n = len(sc["items"])
    if sc["unit"] == "samples":
        for j in range(n):
            ref.sample(cols[:, j])
        return ref
    for j in range(n):
        while ref.now < sc["ticks"][j]:
            ref.tick()
        ref.add(cols[:, j])
    for _ in range(sc["extra"]):
        ref.tick()
    return ref


@pytest.mark.parametrize("cls", LINEAR)
@FAST
@given(sc=scenarios())
def test_linear_variants_equal_per_sample_listings(cls, sc):
    fast = build(cls, sc)
    cols = fast.config.count_min_config.columns(sc["items"])
    ref = run_eager(EAGER[cls](sc["window"], sc["depth"], sc["width"], unit=sc["unit"]), sc, cols)
    np.testing.assert_allclose(fast.values(), ref.counts, rtol=0, atol=1e-9 * sc["window"])
    est = fast.estimate(np.arange(12))
    assert (est >= 0).all()


@FAST
@given(sc=scenarios(max_len=220))
def test_lazy_splitter_equals_eager_listing(sc):
    fast = build(SplitterWindowCM, sc)
    cols = fast.config.count_min_config.columns(sc["items"])
    ref = EagerSplitter(sc["window"], sc["depth"], sc["width"], sc["tau"], sc["mu"],
                        unit=sc["unit"])
    run_eager(ref, sc, cols)
    np.testing.assert_allclose(fast.values(), np.array(ref.values()), rtol=0, atol=1e-7)
    assert fast.n_subcells() == ref.n_subcells()
    assert fast.total_splits == ref.splits
    queries = np.arange(12)
    qcols = fast.config.count_min_config.columns(queries)
    raw = np.array([ref.estimate(qcols[:, j]) for j in range(len(queries))])
    est = fast.estimate(queries)
    assert (est >= 0).all()
    settled = np.abs(raw - np.round(raw)) < 0.5 - 1e-6  # away from rounding ties
    assert np.array_equal(est[settled], np.maximum(np.rint(raw[settled]), 0))


@pytest.mark.parametrize("cls", ALL)
@FAST
@given(sc=scenarios(), data=st.data())
def test_batch_split_invariance(cls, sc, data):
    whole = build(cls, sc, cuts=[])
    n = len(sc["items"])
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=6)))
    split = build(cls, sc, cuts=cuts)
    assert split == whole
    queries = np.arange(12)
    assert np.array_equal(split.estimate(queries), whole.estimate(queries))


@pytest.mark.parametrize("cls", ALL)
@FAST
@given(sc=scenarios())
def test_bytes_and_pickle_round_trip_and_resume(cls, sc):
    sketch = build(cls, sc)
    for clone in (type(sketch).from_bytes(sketch.to_bytes()), pickle.loads(pickle.dumps(sketch))):
        assert clone == sketch
        more = np.arange(20) % 5
        clone.update(more)
        original = copy.deepcopy(sketch)
        original.update(more)
        assert clone == original
        assert np.array_equal(clone.estimate(np.arange(6)), original.estimate(np.arange(6)))


@pytest.mark.parametrize("cls", LINEAR)
@FAST
@given(sc=scenarios(), other=st.lists(st.integers(0, 9), max_size=80), data=st.data())
def test_merge_of_time_based_shards_equals_sketch_of_union(cls, sc, other, data):
    sc = {**sc, "unit": "ticks", "extra": 0}
    n = len(sc["items"])
    if sc["ticks"] is None:
        sc["ticks"] = np.sort(data.draw(st.lists(st.integers(0, 3 * sc["window"]),
                                                 min_size=n, max_size=n))).astype(np.int64)
    other_ticks = np.sort(data.draw(st.lists(st.integers(0, 3 * sc["window"] + 4),
                                             min_size=len(other), max_size=len(other))))
    sc_b = {**sc, "items": np.array(other, dtype=np.int64), "ticks": other_ticks, "cuts": []}
    a, b = build(cls, sc), build(cls, sc_b)
    items = np.concatenate([sc["items"], sc_b["items"]])
    ticks = np.concatenate([sc["ticks"], other_ticks]).astype(np.int64)
    order = np.argsort(ticks, kind="stable")
    union = build(cls, {**sc, "items": items[order], "ticks": ticks[order], "cuts": []})
    empty = cls(sc["window"], depth=sc["depth"], width=sc["width"], seed=sc["seed"], unit="ticks",
                hashing=sc["hashing"])
    b_then_a = copy.deepcopy(b)
    b_then_a.merge(copy.deepcopy(a))
    a.merge(b)
    a.merge(empty)
    if union.now < a.now:  # union clock stops at its last tick; the shards' clock may not
        union.advance_ticks(a.now - union.now)
    np.testing.assert_allclose(a.values(), union.values(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(b_then_a.values(), union.values(), rtol=0, atol=1e-9)
    assert np.array_equal(a.estimate(np.arange(10)), union.estimate(np.arange(10)))


@pytest.mark.parametrize("cls", LINEAR)
def test_merge_of_count_based_shards_at_same_step(cls):
    rng = np.random.default_rng(5)
    xs, ys = rng.integers(0, 30, 500), rng.integers(0, 30, 500)
    a, b = cls(120, depth=2, width=9, seed=1), cls(120, depth=2, width=9, seed=1)
    a.update(xs)
    b.update(ys)
    a.merge(b)
    # the merged sketch has both shards' samples at each step: a time-based stream of pairs
    union = cls(120, depth=2, width=9, seed=1, unit="ticks")
    union.update(np.column_stack([xs, ys]).ravel(), ticks=np.repeat(np.arange(500), 2))
    np.testing.assert_allclose(a.values(), union.values(), rtol=0, atol=1e-9)
    c = cls(120, depth=2, width=9, seed=1)
    c.update(xs[:10])
    with pytest.raises(ValueError, match="same step; self is at step 499, other at step 9"):
        a.merge(c)


def test_merge_refuses_other_classes_shapes_and_splitter():
    a = ProportionalWindowCM(10, depth=1, width=8, seed=1)
    with pytest.raises(ValueError, match=r"self has WindowConfig\(window=10.*other has "
                       r"WindowConfig\(window=11"):
        a.merge(ProportionalWindowCM(11, depth=1, width=8, seed=1))
    with pytest.raises(ValueError, match="seed=2"):
        a.merge(ProportionalWindowCM(10, depth=1, width=8, seed=2))
    with pytest.raises(ValueError, match="must be a ProportionalWindowCM"):
        a.merge(SimpleWindowCM(10, depth=1, width=8, seed=1))
    with pytest.raises(ValueError, match="not a linear sketch"):
        SplitterWindowCM(10, depth=1, width=8).merge(SplitterWindowCM(10, depth=1, width=8))


@pytest.mark.parametrize("cls", ALL)
def test_perfect_is_exact_without_collisions_and_others_track_a_stationary_stream(cls):
    # one item per row cell is impossible to guarantee, so compare to Perfect, not to truth
    rng = np.random.default_rng(2)
    items = rng.integers(0, 50, 6000)
    sketch = cls.from_error(0.01, 0.25, window=1000, seed=3)
    sketch.update(items)
    truth = exact_window_counts(items.tolist(), None, 5999, 1000)
    exact = np.array([truth[j] for j in range(50)])
    est = sketch.estimate(np.arange(50))
    assert (est >= 0).all()
    if cls is PerfectWindowCM:
        assert (est >= exact).all()
    elif cls is not SimpleWindowCM:  # stationary uniform stream: about 20 per item
        perfect = PerfectWindowCM.from_error(0.01, 0.25, window=1000, seed=3)
        perfect.update(items)
        assert np.abs(est - perfect.estimate(np.arange(50))).mean() < 5


def test_time_based_api():
    s = PerfectWindowCM(10, depth=1, width=64, unit="ticks")
    s.update(["a", "a"])  # at tick 0
    s.update(["a"], ticks=[5])
    assert s.estimate(["a"]).tolist() == [3]
    s.advance_ticks(5)  # now 10: tick 0 left the window (ticks 1..10)
    assert (s.now, s.estimate(["a"]).tolist()) == (10, [1])
    with pytest.raises(ValueError, match="non-decreasing and at least now=10"):
        s.update(["a"], ticks=[9])
    with pytest.raises(ValueError, match="one tick per item"):
        s.update(["a", "b"], ticks=[11])
    with pytest.raises(ValueError, match="only accepted when unit='ticks'"):
        PerfectWindowCM(10, depth=1, width=4).update([1], ticks=[0])
    with pytest.raises(ValueError, match="needs unit='ticks'"):
        SimpleWindowCM(10, depth=1, width=4).advance_ticks(1)


def test_splitter_reports_splits_and_memory():
    s = SplitterWindowCM.from_error(0.01, 0.5, window=2000, tau=0.05, mu=1.5)
    rng = np.random.default_rng(0)
    s.update(np.concatenate([rng.integers(0, 100, 3000), rng.integers(50, 150, 3000)]))
    assert s.n_subcells() >= s.width  # every cell is alive
    assert 0 < s.n_splits() <= s.n_subcells()
    assert s.memory_bytes() > 0
    assert s.total_splits >= s.n_splits()


def test_estimates_never_negative_after_a_burst_leaves():
    for cls in ALL:
        s = cls(100, depth=2, width=5, seed=0)
        s.update(np.zeros(100, dtype=np.int64))
        s.update(np.arange(1, 151))
        assert (s.estimate(np.arange(0, 151)) >= 0).all()


@pytest.mark.parametrize("cls", (SimpleWindowCM, ProportionalWindowCM))
@FAST
@given(sc=scenarios())
def test_block_counts_loaded_equal_the_sketch_of_the_samples(cls, sc):
    """What the Spark layer does with per-block matrices built in the JVM: the state is the one
    the samples give when updated in order."""
    whole = build(cls, sc)
    items = sc["items"]
    steps = np.arange(len(items)) if sc["ticks"] is None else sc["ticks"]
    blocks = {}
    for b in np.unique(steps // sc["window"]).tolist():
        part = CountMin(sc["depth"], sc["width"], seed=sc["seed"], hashing=sc["hashing"])
        part.update(items[steps // sc["window"] == b])
        blocks[b] = part.counts
    loaded = cls(sc["window"], depth=sc["depth"], width=sc["width"], seed=sc["seed"],
                 unit=sc["unit"], hashing=sc["hashing"])
    loaded.load_blocks(whole.now, blocks, len(items))
    assert loaded == whole
    assert np.array_equal(loaded.estimate(np.arange(12)), whole.estimate(np.arange(12)))


def test_load_blocks_refuses_a_used_sketch_a_future_block_and_float_counts():
    s = ProportionalWindowCM(4, depth=1, width=8, unit="ticks")
    with pytest.raises(ValueError, match="block 3, after the block 1 of now=5"):
        s.load_blocks(5, {3: np.zeros((1, 8), dtype=np.int64)}, 0)
    with pytest.raises(ValueError, match="must be integers"):
        s.load_blocks(5, {1: np.zeros((1, 8))}, 0)
    with pytest.raises(ValueError, match="shape"):
        s.load_blocks(5, {1: np.zeros((2, 8), dtype=np.int64)}, 0)
    with pytest.raises(ValueError, match="at least now=0; got -3"):  # as update(ticks=[-3])
        s.load_blocks(-3, {}, 0)
    s.update([1], ticks=[2])
    with pytest.raises(ValueError, match="has seen nothing"):
        s.load_blocks(5, {}, 0)


def _java_long(x: int) -> int:
    x &= 2**64 - 1
    return x - 2**64 if x >= 2**63 else x


def test_spark_family_hashes_a_long_as_sparks_count_min_sketch_does():
    """Spark's ``CountMinSketchImpl.hash(long item, int i)``, transcribed with Python integers:
    ``h = hashA[i] * item`` in Java long arithmetic, ``h += h >> 32``, ``h &= 2^31 - 1``,
    ``(int) h % width``."""
    rng = np.random.default_rng(5)
    keys = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 500, dtype=np.int64),
                           np.array([0, 1, -1, 2**63 - 1, -(2**63)], dtype=np.int64)])
    for seed, depth, width in ((0, 1, 7), (7, 4, 2719), (2**31 - 1, 3, 2**31 - 1)):
        cfg = CountMinConfig(depth, width, seed, hashing="spark")
        cols = cfg.columns(keys)
        multipliers = _hashing.spark_multipliers(seed, depth).tolist()
        for r, a in enumerate(multipliers):
            for j, x in enumerate(keys.tolist()):
                h = _java_long(a * x)
                h = _java_long(h + (h >> 32)) & (2**31 - 1)
                assert cols[r, j] == h % width
    # mixed batches: an integer among strings hashes as the integer alone
    cfg = CountMinConfig(2, 50, 3, hashing="spark")
    assert np.array_equal(cfg.columns(["a", 12, "b"])[:, 1], cfg.columns([12])[:, 0])
    with pytest.raises(ValueError, match=r"`seed` must be an integer in \[0, 2147483647\]"):
        CountMinConfig(1, 8, 2**31, hashing="spark")
    with pytest.raises(ValueError, match="`hashing` must be one of"):
        CountMinConfig(1, 8, hashing="murmur")


@pytest.mark.parametrize("cls", ALL)
def test_bytes_written_before_the_hash_family_existed_read_as_multiply_shift(cls):
    """Sketches serialized without ``hashing`` in their configuration (before the Spark family
    existed) hashed with multiply-shift: they read as such, estimate alike, and refuse to merge
    with a Spark-family sketch."""
    from windowkit.core.serialization import pack_state, unpack_state

    params = {"tau": 0.05, "mu": 1.5} if cls is SplitterWindowCM else {}
    sketch = cls(50, depth=2, width=16, seed=9, unit="ticks", **params)
    sketch.update(np.arange(40) % 7, ticks=np.arange(40) // 3)
    meta, arrays = unpack_state(sketch.to_bytes(), cls.FORMAT_TAG, cls.FORMAT_VERSION)
    assert meta["config"].pop("hashing") == "multiply-shift"
    old = cls.from_bytes(pack_state(cls.FORMAT_TAG, cls.FORMAT_VERSION, meta, arrays))
    assert old == sketch and old.config.hashing == "multiply-shift"
    assert np.array_equal(old.estimate(np.arange(7)), sketch.estimate(np.arange(7)))
    spark_cm = CountMin(2, 16, seed=9, hashing="spark")
    with pytest.raises(ValueError, match="hashing='spark'"):
        old.to_count_min().merge(spark_cm)
