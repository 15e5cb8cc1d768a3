"""Persistent items (issue 4): Synthetic1 / Synthetic2 generators of the paper's Table 1."""

from __future__ import annotations

import math

import numpy as np
import pytest

from windowkit.datasets.persistent_streams import (
    SYNTHETIC1,
    SYNTHETIC2,
    expected_tuples,
    grouped_stream,
    synthetic1,
    synthetic2,
    to_ipv4,
)


def test_table_1_constants():
    for fractions, persistences in (SYNTHETIC1, SYNTHETIC2):
        assert math.isclose(sum(fractions), 1.0)
        assert len(fractions) == len(persistences) == 10
    # Table 1: mean persistence 0.089 and 0.01
    assert round(sum(f * p for f, p in zip(*SYNTHETIC1, strict=False)), 3) == 0.089
    assert round(sum(f * p for f, p in zip(*SYNTHETIC2, strict=False)), 2) == 0.01


@pytest.mark.parametrize("make", [synthetic1, synthetic2])
def test_generated_stream_is_seeded_sorted_and_has_the_group_persistences(make):
    m, n = 20_000, 60
    s = make(universe_size=m, n_slots=n, seed=3)
    again = make(universe_size=m, n_slots=n, seed=3)
    assert (s.items == again.items).all() and (s.slots == again.slots).all()
    assert not (make(universe_size=m, n_slots=n, seed=4).items[:50] == s.items[:50]).all()
    assert (np.diff(s.slots) >= 0).all() and s.slots.min() >= 0 and s.slots.max() < n
    assert s.items.min() >= 1 and s.items.max() <= m
    # one tuple per (item, slot)
    assert np.unique(s.items * n + s.slots).size == len(s)
    # per group: appearances ~ Binomial(size * n, P_i), checked at 6 standard deviations
    counts = np.bincount(s.group_of[s.items - 1], minlength=10)
    sizes = np.bincount(s.group_of, minlength=10)
    for g in range(10):
        mean = sizes[g] * n * s.persistences[g]
        sd = math.sqrt(mean * (1 - s.persistences[g]))
        assert abs(counts[g] - mean) <= 6 * sd + 1
    total_sd = math.sqrt(expected_tuples(m, n, SYNTHETIC1 if make is synthetic1 else SYNTHETIC2))
    assert abs(len(s) - expected_tuples(m, n, SYNTHETIC1 if make is synthetic1 else SYNTHETIC2)) \
        <= 6 * total_sd


def test_extreme_groups_and_errors():
    s = grouped_stream((0.5, 0.5), (1.0, 0.0), universe_size=10, n_slots=7, seed=0)
    assert len(s) == 35 and set(np.bincount(s.slots).tolist()) == {5}
    with pytest.raises(ValueError, match="`fractions` must sum to 1"):
        grouped_stream((0.5, 0.6), (1.0, 0.0), universe_size=10, n_slots=7)
    with pytest.raises(ValueError, match="`universe_size` must be an integer"):
        synthetic1(universe_size=0)
    assert to_ipv4(np.array([3232235777])).tolist() == ["192.168.1.1"]
