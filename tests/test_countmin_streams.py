"""Synthetic streams of the windowed Count-Min paper (issue 3, Section 4)."""

from __future__ import annotations

import numpy as np
import pytest

from windowkit.datasets.countmin_streams import (
    DISTRIBUTIONS,
    MULTI_ORDER,
    distribution_weights,
    multi_distribution_stream,
    shift_offsets,
    shifting_stream,
    zipf_ids,
)


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_weights_are_probabilities(dist):
    p = distribution_weights(dist, n=1000, w=4)
    assert p.shape == (1000,) and np.isclose(p.sum(), 1.0) and (p > 0).all()


def test_weight_shapes_follow_the_definitions():
    assert np.allclose(distribution_weights("uniform", 10), 0.1)
    z1, z2 = distribution_weights("zipf1", 100), distribution_weights("zipf2", 100)
    assert np.isclose(z1[0] / z1[9], 10.0) and np.isclose(z2[0] / z2[9], 100.0)
    plateau = distribution_weights("plateau", 50, w=4)
    assert np.allclose(plateau[:4] / plateau[4], 100.0) and np.allclose(plateau[4:], plateau[4])
    normal = distribution_weights("normal", 100)
    assert normal.argmax() in (49, 50) and np.isclose(normal[10], normal[89])


def test_shift_every_p_samples_and_reset_after_r_shifts():
    assert shift_offsets(0, 10, n=1000, w=2, p=2, r=4).tolist() == [0, 0, 2, 2, 4, 4, 6, 6, 8, 8]
    assert shift_offsets(10, 12, n=1000, w=2, p=2, r=4).tolist() == [0, 0]
    s = shifting_stream("plateau", 60_000, n=1000, w=2, p=10_000, r=4, seed=0)
    heavy = [np.bincount(s[k * 10_000 : (k + 1) * 10_000], minlength=1000).argsort()[-2:]
             for k in range(6)]
    assert [sorted(h.tolist()) for h in heavy] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [0, 1]]


def test_streams_are_seeded():
    a = shifting_stream("zipf1", 1000, seed=3)
    assert np.array_equal(a, shifting_stream("zipf1", 1000, seed=3))
    assert not np.array_equal(a, shifting_stream("zipf1", 1000, seed=4))
    assert np.array_equal(zipf_ids(500, 100, seed=1), zipf_ids(500, 100, seed=1))


def test_multi_distribution_trace_layout():
    s = multi_distribution_stream(seed=0)
    assert len(s) == 480_000 == len(MULTI_ORDER) * 60_000
    # Zipf2 segment (6th) is far more concentrated than the uniform one before it
    top = [np.bincount(s[k * 60_000 : (k + 1) * 60_000]).max() for k in (4, 5)]
    assert top[1] > 10 * top[0]


def test_bad_distribution_name():
    with pytest.raises(ValueError, match="`distribution` must be one of"):
        distribution_weights("pareto", 10)
