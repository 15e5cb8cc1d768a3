"""The sort of rows by key slot and time against numpy's stable sort."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkit.core.ordering import key_time_order


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
def test_key_time_order_is_a_stable_sort_by_slot_and_time_unless_time_ordered(case):
    """One composite sort where key and time fit in an int64 together, ``lexsort`` where
    they do not (times of 2**58 span more than 2**63 over several slots)."""
    slot, _, time, _ = case
    order = key_time_order(slot, time)
    if len(time) < 2 or np.all(np.diff(time) >= 0):
        assert order is None
    else:
        assert np.array_equal(order, np.lexsort((time, slot)))
