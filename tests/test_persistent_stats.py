"""Persistent items (issue 4): the probabilistic guarantees over seeded trials.

Every tolerance is a binomial (or Bernstein) tail bound at ``FAIL = 1e-6``, computed from the
paper's bound, never tuned to observed values. Items in a trial are independent under the
paper's model (``h`` uniform and independent on distinct inputs), so the number of misses over
``items x seeds`` trials is a sum of independent Bernoulli variables.
"""

from __future__ import annotations

import math

import numpy as np

from windowkit.core.persistence import PersistentItemsSketch, SlidingPersistentItemsSketch
from windowkit.reference import persistence as ref

FAIL = 1e-6
E2 = math.exp(-2)


def binom_upper(trials: int, p: float, fail: float = FAIL) -> int:
    """Smallest k with P[Binomial(trials, p) > k] <= fail (exact tail via log-pmf)."""
    logs = [math.lgamma(trials + 1) - math.lgamma(j + 1) - math.lgamma(trials - j + 1)
            + j * math.log(p) + (trials - j) * math.log1p(-p) for j in range(trials + 1)]
    tail = 0.0
    for k in range(trials, -1, -1):
        tail += math.exp(logs[k])
        if tail > fail:
            return k
    return 0


def binom_lower(trials: int, p: float, fail: float = FAIL) -> int:
    """Largest k with P[Binomial(trials, p) < k] <= fail."""
    return trials - binom_upper(trials, 1 - p, fail)


def exact_persistence_stream(n_items, p, n_slots, rng, offset=0):
    """Each item appears in exactly ``p`` random slots of ``[offset, offset + n_slots)``."""
    keys = rng.random((n_items, n_slots)).argsort(axis=1)[:, :p]
    items = np.repeat(np.arange(n_items, dtype=np.int64), p)
    slots = keys.ravel().astype(np.int64) + offset
    order = np.argsort(slots, kind="stable")
    return items[order], slots[order]


def miss_probability(cfg, p):
    """P[G(tau) > p - min_count + 1]: the exact miss probability of one instance."""
    tau = min(1.0, cfg.tau)
    return (1 - tau) ** (p - cfg.min_count + 1)


def test_fixed_window_false_negatives_per_instance_and_with_delta():
    n, alpha, eps = 100, 0.5, 0.2
    p = math.ceil(alpha * n)  # the hardest persistent items: persistence exactly alpha n
    rng = np.random.default_rng(2024)
    items, slots = exact_persistence_stream(2000, p, n, rng)
    for delta in (None, 0.05):
        misses = trials = 0
        for seed in range(20):
            sk = PersistentItemsSketch(alpha=alpha, epsilon=eps, n=n, delta=delta, seed=seed)
            sk.update(items, slots)
            misses += 2000 - len(sk.persistent_items())
            trials += 2000
        bound = E2 if delta is None else delta
        assert misses <= binom_upper(trials, bound)
        # and the miss rate is the paper's geometric law, (1 - tau)^(eps n + 1) per instance
        q = miss_probability(sk.config, p) ** sk.instances
        assert q <= bound
        assert binom_lower(trials, q) <= misses <= binom_upper(trials, q)


def test_sliding_window_false_negatives_per_instance_and_with_delta():
    n, alpha, eps = 60, 0.3, 0.15
    p = math.ceil(alpha * n)
    rng = np.random.default_rng(7)
    # the previous window is busy too, so tuples of earlier slots must expire correctly
    old_i, old_s = exact_persistence_stream(1500, n // 2, n, rng, offset=0)
    new_i, new_s = exact_persistence_stream(1500, p, n, rng, offset=n)
    items, slots = np.concatenate([old_i, new_i]), np.concatenate([old_s, new_s])
    for delta in (None, 0.01):
        misses = trials = 0
        for seed in range(20):
            sk = SlidingPersistentItemsSketch(alpha=alpha, epsilon=eps, n=n, delta=delta,
                                              seed=seed)
            sk.update(items, slots)
            assert sk.current_slot == 2 * n - 1
            misses += 1500 - len(sk.persistent_items())
            trials += 1500
        bound = E2 if delta is None else delta
        assert misses <= binom_upper(trials, bound)
        q = miss_probability(sk.config, p) ** sk.instances
        assert q <= bound
        assert binom_lower(trials, q) <= misses <= binom_upper(trials, q)


def test_sliding_tuples_match_lemma_3_7():
    """E[Z_c] = tau * sum_d p_d^c; Z_c is Binomial(#distinct (d, t) in the window, tau)."""
    n, alpha, eps = 50, 0.5, 0.1
    rng = np.random.default_rng(3)
    items = rng.zipf(1.3, size=60_000) % 5000
    slots = np.sort(rng.integers(0, 3 * n, size=items.size))
    c = int(slots.max())
    rows = list(zip(items.tolist(), slots.tolist(), strict=False))
    pairs = sum(ref.persistence(rows, c - n + 1, c).values())
    total = 0
    seeds = 20
    for seed in range(seeds):
        sk = SlidingPersistentItemsSketch(alpha=alpha, epsilon=eps, n=n, seed=seed)
        sk.update(items, slots)
        total += sk.num_tuples
    tau = sk.tau
    assert binom_lower(seeds * pairs, tau) <= total <= binom_upper(seeds * pairs, tau)


def test_fixed_tuples_match_lemma_3_3_expectation():
    """E[Z] = sum_d 1 - (1 - tau)^p_d; Bernstein bound on the sum over seeds."""
    n, alpha, eps = 80, 0.5, 0.2
    rng = np.random.default_rng(9)
    items = rng.zipf(1.4, size=40_000) % 4000
    slots = np.sort(rng.integers(0, n, size=items.size))
    rows = zip(items.tolist(), slots.tolist(), strict=True)
    p = np.array(list(ref.persistence(rows, 0, n - 1).values()))
    seeds = 20
    total = 0
    for seed in range(seeds):
        sk = PersistentItemsSketch(alpha=alpha, epsilon=eps, n=n, seed=seed)
        sk.update(items, slots)
        total += sk.num_tuples
    probs = 1 - (1 - sk.tau) ** p
    mean = seeds * probs.sum()
    var = seeds * (probs * (1 - probs)).sum()
    log_term = math.log(2 / FAIL)
    slack = math.sqrt(2 * var * log_term) + log_term / 3 * 2
    assert abs(total - mean) <= slack
    assert mean <= seeds * np.minimum(1, 2 * sk.tau * p).sum()  # Lemma 3.3's bound
