"""The sort of rows by key slot and time against numpy's stable sort, and the order of rows
tied at one time against Python's sort of their values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkit.core.ordering import key_time_order, time_order


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


def _float_key(v: float) -> tuple:
    """Floats as the tie order compares them: by value, -0.0 before 0.0, NaN last."""
    return (math.isnan(v), 0.0 if math.isnan(v) else v, math.copysign(1.0, v))


@st.composite
def tied_rows(draw):
    """Rows at few times, with floats (signed zeros, NaN, infinities), integers too wide to
    pack beside another column, text (None among it) and a categorical whose categories come
    in an order of their own."""
    n = draw(st.integers(0, 120))
    time = np.array(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)), dtype=np.int64)
    if draw(st.booleans()):
        time = np.sort(time)
    floats = st.sampled_from([0.0, -0.0, 1.5, -2.0, np.nan, np.inf, -np.inf])
    value = np.array(draw(st.lists(floats, min_size=n, max_size=n)), dtype=np.float64)
    wide = np.array(draw(st.lists(st.sampled_from([-(2**63), -1, 0, 2**63 - 1]), min_size=n,
                                  max_size=n)), dtype=np.int64)
    text = np.array(draw(st.lists(st.sampled_from(["a", "b", "a\x00c", None]), min_size=n,
                                  max_size=n)), dtype=object)
    names = ["x", "y", "z"]
    category = draw(st.lists(st.sampled_from(names), min_size=n, max_size=n))
    categories = draw(st.permutations(names))
    return time, value, wide, text, pd.Categorical(category, categories=categories)


def _contents(order, n, *columns) -> list[tuple]:
    order = np.arange(n) if order is None else order
    return [tuple(repr(c[i]) for c in columns) for i in order]


@settings(max_examples=200, deadline=None)
@given(tied_rows(), st.randoms(use_true_random=False))
def test_time_order_orders_tied_rows_by_their_contents_whatever_their_arrival(case, random):
    """Against Python's sort of the rows' values; the same rows shuffled, with their
    categorical's categories in another order, come out the same."""
    time, value, wide, text, category = case
    n = len(time)
    expected = sorted(range(n), key=lambda i: (time[i], _float_key(value[i]), int(wide[i]),
                                               (text[i] is not None, text[i] or ""),
                                               str(category[i])))
    columns = (time, value, wide, text, np.asarray(category, dtype=object))
    got = time_order(time, [value, wide, text, category])
    assert _contents(got, n, *columns) == _contents(np.array(expected, dtype=np.int64), n,
                                                    *columns)
    if got is None:
        assert n < 2 or np.all(np.diff(time) > 0)
    shuffle = np.array(random.sample(range(n), n), dtype=np.int64)
    other = pd.Categorical(np.asarray(category, dtype=object)[shuffle],
                           categories=list(category.categories)[::-1])
    again = time_order(time[shuffle], [value[shuffle], wide[shuffle], text[shuffle], other])
    again = shuffle if again is None else shuffle[again]
    assert _contents(again, n, *columns) == _contents(got, n, *columns)


@settings(max_examples=200, deadline=None)
@given(rows(), st.randoms(use_true_random=False))
def test_key_time_order_orders_a_keys_rows_at_one_time_by_their_values(case, random):
    """Each key's rows come in order of time, then value, whatever their arrival order; out
    of time order, the rows are sorted by key, time and value."""
    slot, _, time, _ = case
    n = len(time)
    value = np.array([random.choice([0.5, -1.0, 2.25, np.nan]) for _ in range(n)])
    order = key_time_order(slot, time, [value])
    got = np.arange(n) if order is None else order
    assert sorted(got.tolist()) == list(range(n))
    assert np.all(np.diff(time[got]) >= 0) or np.array_equal(
        got, np.lexsort((_float_ranks(value), time, slot)))
    for s in set(slot.tolist()):
        mine = [(int(time[i]), _float_key(value[i])) for i in got if slot[i] == s]
        assert mine == sorted(mine)


def _float_ranks(value: np.ndarray) -> np.ndarray:
    keys = [_float_key(v) for v in value]
    distinct = sorted(set(keys))
    return np.array([distinct.index(k) for k in keys], dtype=np.int64)
