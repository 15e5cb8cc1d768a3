"""Vanilla Count-Min and the guarantees of PERFECT (issue 3)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from windowkit.core.hashing import hash64
from windowkit.core.sketches import (
    CountMin,
    CountMinConfig,
    PerfectWindowCM,
    ProportionalWindowCM,
    SimpleWindowCM,
    SplitterWindowCM,
    _hashing,
)
from windowkit.core.sketches.perfect import _mix_keys
from windowkit.reference.count_min import exact_window_counts, vanilla_counts

WINDOWED = (PerfectWindowCM, SimpleWindowCM, ProportionalWindowCM, SplitterWindowCM)


def binomial_upper(trials: int, p: float, alpha: float = 1e-6) -> int:
    """Smallest k with P[Binomial(trials, p) > k] < alpha."""
    tail = 1.0
    for k in range(trials + 1):
        tail -= math.comb(trials, k) * p**k * (1 - p) ** (trials - k)
        if tail < alpha:
            return k
    return trials


def test_dimensions_follow_the_paper():
    cfg = CountMinConfig.from_error(0.01, 0.5)
    assert (cfg.depth, cfg.width) == (1, math.ceil(math.e / 0.01))
    assert CountMinConfig.from_error(0.001, 1 / 16).depth == 4
    assert CountMinConfig.from_error(0.01, 0.004).depth == math.ceil(math.log2(1 / 0.004))


def test_kernel_key_mixing_equals_hash64():
    values = np.array([0, 1, -1, 2**62, -(2**63), 12345], dtype=np.int64)
    keys, mix = _hashing.prepare(values, CountMinConfig(1, 8, seed=11))
    assert mix
    assert np.array_equal(_mix_keys(keys, _hashing.seed_mix(11)), hash64(values, seed=11))


def test_string_and_integer_items_are_counted():
    cm = CountMin(3, 64, seed=5)
    cm.update(["10.0.0.1", "10.0.0.2", "10.0.0.1"])
    cm.update(np.array([7, 7, 7]))
    est = cm.estimate(["10.0.0.1", "10.0.0.2", 7])
    assert est[0] >= 2 and est[1] >= 1 and est[2] >= 3


def test_columns_match_reference_counts():
    rng = np.random.default_rng(0)
    items = rng.integers(0, 500, 3000)
    cm = CountMin(4, 37, seed=9)
    cm.update(items)
    assert np.array_equal(cm.counts, vanilla_counts(cm.config.columns(items), 37))


def test_row_hashes_spread_like_a_universal_family():
    # pairs of distinct keys collide in a row with probability about 1/width
    cfg = CountMinConfig(8, 50, seed=3)
    cols = cfg.columns(np.arange(4000))
    collisions = (cols[:, :2000] == cols[:, 2000:]).mean()
    # 16,000 Bernoulli(1/50) pairs: mean 0.02, sd about 0.0011
    assert abs(collisions - 1 / 50) < 6 * math.sqrt(0.02 * 0.98 / 16000)


def _zipf_stream(rng, m, n):
    ranks = np.arange(1, n + 1)
    p = 1.0 / ranks
    return rng.choice(n, size=m, p=p / p.sum())


def test_vanilla_never_underestimates_and_meets_eps_bound_with_prob_delta():
    epsilon, delta, m, n, trials = 0.05, 0.25, 2000, 300, 300
    failures = 0
    for seed in range(trials):
        rng = np.random.default_rng(seed)
        items = _zipf_stream(rng, m, n)
        cm = CountMin.from_error(epsilon, delta, seed=seed)
        cm.update(items)
        truth = Counter(items.tolist())
        est = cm.estimate(np.arange(n))
        exact = np.array([truth[j] for j in range(n)])
        assert (est >= exact).all()
        j = int(rng.integers(0, n))  # one random query per independent trial
        failures += est[j] - exact[j] >= cm.epsilon * (m - exact[j])
    assert failures <= binomial_upper(trials, 2.0**-cm.depth)


def test_perfect_equals_vanilla_of_last_n_items_and_meets_bound():
    epsilon, delta, window, m, n, trials = 0.05, 0.25, 700, 2000, 300, 300
    failures = 0
    for seed in range(trials):
        rng = np.random.default_rng(seed)
        items = _zipf_stream(rng, m, n)
        perfect = PerfectWindowCM.from_error(epsilon, delta, window=window, seed=seed)
        for part in np.array_split(items, 4):
            perfect.update(part)
        vanilla = CountMin.from_error(epsilon, delta, seed=seed)
        vanilla.update(items[-window:])
        assert np.array_equal(perfect.counts, vanilla.counts)
        truth = exact_window_counts(items.tolist(), None, m - 1, window)
        est = perfect.estimate(np.arange(n))
        exact = np.array([truth[j] for j in range(n)])
        assert (est >= exact).all()
        j = int(rng.integers(0, n))
        failures += est[j] - exact[j] >= perfect.epsilon * (window - exact[j])
    assert failures <= binomial_upper(trials, 2.0**-perfect.depth)


def test_vanilla_merge_equals_union_and_refuses_mismatch():
    a, b, union = CountMin(2, 40, seed=1), CountMin(2, 40, seed=1), CountMin(2, 40, seed=1)
    a.update(["x", "y", 3])
    b.update(["y", 4])
    union.update(["x", "y", 3, "y", 4])
    a.merge(b)
    assert a == union
    with pytest.raises(ValueError, match=r"self has CountMinConfig\(depth=2, width=40, seed=1, "
                       r"hashing='multiply-shift'\), other has CountMinConfig\(depth=2, width=40, "
                       r"seed=2, hashing='multiply-shift'\)"):
        a.merge(CountMin(2, 40, seed=2))
    with pytest.raises(ValueError, match="width=41"):
        a.merge(CountMin(2, 41, seed=1))
    with pytest.raises(ValueError, match="hashing='spark'"):
        a.merge(CountMin(2, 40, seed=1, hashing="spark"))
    with pytest.raises(ValueError, match="itself"):
        a.merge(a)


def test_vanilla_memory_and_emptiness():
    cm = CountMin(3, 20, seed=4)
    cm.update(np.arange(100) % 7)
    assert cm.memory_bytes() == 3 * 20 * 8
    assert CountMin(1, 2).is_empty() and not cm.is_empty()


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"epsilon": 1.5, "delta": 0.1}, r"`epsilon` must be in \(0, 1\); got 1.5"),
        ({"epsilon": 0.0, "delta": 0.1}, r"`epsilon` must be in \(0, 1\); got 0.0"),
        ({"epsilon": 0.1, "delta": 1.0}, r"`delta` must be in \(0, 1\); got 1.0"),
        ({"epsilon": 0.1, "delta": -0.2}, r"`delta` must be in \(0, 1\); got -0.2"),
    ],
)
def test_bad_error_parameters(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        CountMin.from_error(**kwargs)
    for cls in WINDOWED:
        with pytest.raises(ValueError, match=pattern):
            cls.from_error(window=10, **kwargs)


def test_bad_window_tau_mu_unit():
    for cls in WINDOWED:
        with pytest.raises(ValueError, match=r"`window` must be an integer in \[1, .*got 0"):
            cls(0, depth=1, width=4)
        with pytest.raises(ValueError, match="`unit` must be one of 'samples', 'ticks'"):
            cls(5, depth=1, width=4, unit="seconds")
    with pytest.raises(ValueError, match=r"`tau` must be in \(0, 1\]; got 0"):
        SplitterWindowCM(10, depth=1, width=4, tau=0)
    with pytest.raises(ValueError, match=r"`tau` must be in \(0, 1\]; got 1.5"):
        SplitterWindowCM(10, depth=1, width=4, tau=1.5)
    with pytest.raises(ValueError, match=r"`mu` must be in \(0, inf\); got -1"):
        SplitterWindowCM(10, depth=1, width=4, mu=-1)
    with pytest.raises(ValueError, match=r"`depth` must be an integer"):
        CountMin(0, 4)


def test_corrupt_bytes_are_value_errors():
    cm = CountMin(2, 10)
    cm.update([1, 2])
    blob = bytearray(cm.to_bytes())
    blob[-3] ^= 0xFF
    with pytest.raises(ValueError, match="checksum mismatch"):
        CountMin.from_bytes(bytes(blob))
    with pytest.raises(ValueError, match="truncated"):
        CountMin.from_bytes(cm.to_bytes()[:-5])
    with pytest.raises(ValueError, match="not a 'CMPERFCT' object"):
        PerfectWindowCM.from_bytes(cm.to_bytes())
    with pytest.raises(ValueError, match="too short"):
        SplitterWindowCM.from_bytes(b"abc")
