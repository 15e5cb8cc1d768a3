"""Counting sort by key slot and per-key time sort against numpy's stable sorts."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkit.core.ordering import group_rows_by_slot, key_time_order, sort_each_key_by_time


@st.composite
def rows(draw):
    n = draw(st.integers(0, 300))
    n_slots = draw(st.integers(1, 6))
    slot = np.array(draw(st.lists(st.integers(0, n_slots - 1), min_size=n, max_size=n)),
                    dtype=np.int64)
    # few distinct times: many ties, whose order must survive
    shape = draw(st.sampled_from(["random", "nearly sorted", "reversed"]))
    time = np.array(draw(st.lists(st.integers(-20, 20), min_size=n, max_size=n)), dtype=np.int64)
    # times that fit beside their code in one word, and times too wide for that
    time *= draw(st.sampled_from([1, 2**50, 2**58]))
    if shape == "nearly sorted":
        time = np.sort(time)
        if n > 1:
            i = draw(st.integers(0, n - 2))
            time[[i, i + 1]] = time[[i + 1, i]]
    elif shape == "reversed":
        time = np.sort(time)[::-1].copy()
    codes = np.arange(n, dtype=np.int64).astype(np.int8)  # row identity (mod 256)
    return slot, n_slots, time, codes


@settings(max_examples=200, deadline=None)
@given(rows())
def test_grouping_then_time_sort_equals_a_stable_sort_by_slot_and_time(case):
    slot, n_slots, time, codes = case
    order = np.lexsort((time, slot))  # lexsort is stable
    s, t, c = group_rows_by_slot(slot, n_slots, time, codes)
    assert np.array_equal(s, slot[np.argsort(slot, kind="stable")])
    s, t, c = sort_each_key_by_time(s, t, c)
    assert np.array_equal(s, slot[order])
    assert np.array_equal(t, time[order])
    assert np.array_equal(c, codes[order])


@settings(max_examples=200, deadline=None)
@given(rows())
def test_key_time_order_is_a_stable_sort_by_slot_and_time_unless_time_ordered(case):
    """One composite sort where key and time fit in an int64 together, ``lexsort`` where
    they do not (times of 2**58 span more than 2**63 over several slots)."""
    slot, _, time, _ = case
    order = key_time_order(slot, time)
    if len(time) < 2 or np.all(np.diff(time) >= 0):
        assert order is None
    else:
        assert np.array_equal(order, np.lexsort((time, slot)))
