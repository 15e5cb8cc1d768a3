"""Persistent items (issue 4): the StreamOperator wrapper used by the Spark adapter.

With ``epsilon * window = 2`` the sampling probability is 1, the sketch is exact and every
emitted row can be checked against the brute-force definitions::

    slots      0    1    2    3    4    5    6    7    8
    item a     x    x    .    x    x    .    .    .    .
    window=4 ending at 3: [0..3] -> a in 3 slots -> reported (needs ceil((0.75-0.5)*4) = 1)
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkit.core.operator import EventTimeRunner
from windowkit.core.persistence.operator import (
    ExactPersistentItemsOperator,
    PersistentItemsOperator,
)
from windowkit.reference import persistence as ref

SETTINGS = settings(max_examples=40, deadline=None)
SLOT = 10
ALPHA, EPS, WINDOW = 0.75, 0.5, 4  # eps * window = 2: tau = 1, exact


def make(mode="sliding", item_type="string", **kw):
    return PersistentItemsOperator(alpha=ALPHA, epsilon=EPS, window=WINDOW, slot_length=SLOT,
                                   origin=5, mode=mode, item_type=item_type, **kw)


@st.composite
def batches(draw, strings=True):
    pool = ["a", "b", "c"] if strings else [1, 2, 3]
    n = draw(st.integers(0, 60))
    times = sorted(draw(st.lists(st.integers(0, 200), min_size=n, max_size=n)))
    items = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
    return pd.DataFrame({"time": np.array(times, dtype=np.int64),
                         "item": np.array(items, dtype=object if strings else np.int64)})


def run(op, df, cuts=(), watermarks=False):
    bounds = [0, *sorted(c for c in cuts if c <= len(df)), len(df)]
    out = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        part = df.iloc[lo:hi]
        out.append(op.process(part))
        if watermarks and len(part):
            out.append(op.advance(int(part.time.iloc[-1]) - 1))
    out.append(op.finish())
    out = [o for o in out if len(o)]
    return pd.concat(out, ignore_index=True) if out else op.empty_output()


def expected_sliding(df):
    slots = ((df.time - 5) // SLOT).tolist()
    rows = list(zip(df.item.tolist(), slots, strict=False))
    if not rows:
        return []
    first, last = min(slots), max(slots)
    need = math.ceil((ALPHA - EPS) * WINDOW)
    out = []
    for c in range(first, last + 1):
        p = ref.persistence(rows, c - WINDOW + 1, c)
        out += [[c, d, float(v + EPS * WINDOW / 2)] for d, v in sorted(p.items()) if v >= need]
    return out


@SETTINGS
@given(batches(), st.lists(st.integers(0, 60), max_size=5), st.booleans())
def test_sliding_output_matches_definition_and_is_split_invariant(df, cuts, watermarks):
    got = run(make(), df, cuts, watermarks)
    assert got.values.tolist() == expected_sliding(df)
    assert got.dtypes.tolist() == [np.dtype("int64"), np.dtype("O"), np.dtype("float64")]


@SETTINGS
@given(batches(strings=False), st.lists(st.integers(0, 60), max_size=5))
def test_fixed_mode_reports_tumbling_windows(df, cuts):
    got = run(make(mode="fixed", item_type="int64"), df, cuts)
    slots = ((df.time - 5) // SLOT).to_numpy()
    need = math.ceil((ALPHA - EPS) * WINDOW)
    want = []
    for k in sorted(set((slots // WINDOW).tolist())):
        rows = list(zip(df.item.tolist(), slots.tolist(), strict=False))
        p = ref.persistence(rows, k * WINDOW, k * WINDOW + WINDOW - 1)
        want += [[k * WINDOW + WINDOW - 1, d, v + 1.0] for d, v in sorted(p.items()) if v >= need]
    assert got.values.tolist() == want
    assert got["item"].dtype == np.int64



def make_exact(mode="sliding", item_type="string", alpha=0.5):
    return ExactPersistentItemsOperator(alpha=alpha, window=WINDOW, slot_length=SLOT, origin=5,
                                        mode=mode, item_type=item_type)


def expected_exact(df, mode, alpha):
    """The definition: per window, the items in at least max(1, ceil(alpha * n)) of its
    slots, with their slot count; sliding windows end at every slot from the first one
    to the last, fixed ones at the last slot of each window holding a row."""
    slots = ((df.time - 5) // SLOT).tolist()
    rows = list(zip(df.item.tolist(), slots, strict=False))
    if not rows:
        return []
    need = max(1, math.ceil(round(alpha * WINDOW, 9)))
    ends = (range(min(slots), max(slots) + 1) if mode == "sliding"
            else sorted({s // WINDOW * WINDOW + WINDOW - 1 for s in slots}))
    out = []
    for c in ends:
        p = ref.persistence(rows, c - WINDOW + 1, c)
        out += [[c, d, v] for d, v in sorted(p.items()) if v >= need]
    return out


@SETTINGS
@given(batches(), st.lists(st.integers(0, 60), max_size=5), st.booleans(),
       st.sampled_from(["sliding", "fixed"]), st.sampled_from([0.2, 0.5, 0.75, 1.0]))
def test_exact_operator_matches_the_definition_and_is_split_invariant(df, cuts, watermarks,
                                                                     mode, alpha):
    got = run(make_exact(mode, alpha=alpha), df, cuts, watermarks)
    assert got.values.tolist() == expected_exact(df, mode, alpha)
    assert got.dtypes.tolist() == [np.dtype("int64"), np.dtype("O"), np.dtype("int64")]


def test_exact_operator_bytes_round_trip_and_refuse_corruption():
    op = make_exact(item_type="int64")
    op.process(pd.DataFrame({"time": [5, 16, 27], "item": [1, 1, 2]}))
    blob = op.to_bytes()
    closed = op.advance(34)
    again = ExactPersistentItemsOperator.from_bytes(blob)
    # item 2 is in one slot of the window, and needs two of four
    assert again.advance(34).values.tolist() == closed.values.tolist() == [[2, 1, 2]]
    with pytest.raises(ValueError, match="PERSEXOP state is corrupt"):
        ExactPersistentItemsOperator.from_bytes(blob[:-1] + bytes([blob[-1] ^ 1]))
    with pytest.raises(ValueError, match="alpha"):
        ExactPersistentItemsOperator(alpha=0, window=4, slot_length=10)

def test_watermarks_deadlines_and_bytes():
    op = make()
    df = pd.DataFrame({"time": [5, 16, 27], "item": ["a", "a", "b"]})  # slots 0, 1, 2
    assert op.next_deadline() is None
    out = op.process(df)
    assert out.values.tolist() == [[0, "a", 2.0], [1, "a", 3.0]]  # slot 2 is still open
    assert op.next_deadline() == 5 + 3 * SLOT - 1  # slot 2 is [25, 35)
    assert op.advance(33).empty
    blob = op.to_bytes()
    closed = op.advance(34)
    assert closed["window_end_slot"].tolist() == [2, 2]
    again = PersistentItemsOperator.from_bytes(blob)
    assert again.advance(34).values.tolist() == closed.values.tolist()
    with pytest.raises(ValueError, match="already closed"):
        op.process(pd.DataFrame({"time": [30], "item": ["a"]}))
    with pytest.raises(ValueError, match="PERSOPR state is corrupt"):
        PersistentItemsOperator.from_bytes(blob[:-1] + bytes([blob[-1] ^ 1]))


@SETTINGS
@given(batches(strings=False), st.sampled_from(["sliding", "fixed"]), st.integers(0, 2**16))
def test_a_batch_in_any_row_order_gives_the_output_of_its_time_order(df, mode, seed):
    # A sampling configuration (tau = 2 / (eps n) = 0.25): which (item, slot) pairs are
    # sampled must not depend on the rows' order within a slot.
    def operator():
        return PersistentItemsOperator(alpha=0.6, epsilon=0.4, window=20, slot_length=SLOT,
                                       origin=5, mode=mode, item_type="int64", seed=3)

    shuffled = df.iloc[np.random.default_rng(seed).permutation(len(df))]
    want = run(operator(), df)
    got = run(operator(), shuffled.reset_index(drop=True))
    assert got.values.tolist() == want.values.tolist()


def test_runner_with_disorder_and_watermarks_matches_sorted_processing():
    rng = np.random.default_rng(4)
    times = np.sort(rng.integers(0, 400, 300))
    items = rng.choice(np.array(["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"], dtype=object),
                       300)
    df = pd.DataFrame({"time": times, "item": items})
    want = run(make(), df)
    runner = EventTimeRunner(make())
    outs = []
    for lo in range(0, 300, 100):
        chunk = df.iloc[lo:lo + 100].sample(frac=1.0, random_state=lo)  # disorder
        out, late = runner.push(chunk, watermark=int(df.time.iloc[lo:lo + 100].max()))
        assert late.empty
        outs.append(out)
    outs.append(runner.finish())
    got = pd.concat(outs, ignore_index=True)
    assert got.values.tolist() == want.values.tolist()


def test_bad_parameters():
    with pytest.raises(ValueError, match="`slot_length` must be an integer in"):
        PersistentItemsOperator(0.5, 0.1, 10, 0)
    with pytest.raises(ValueError, match="`mode` must be one of"):
        PersistentItemsOperator(0.5, 0.1, 10, 10, mode="hopping")
    with pytest.raises(ValueError, match="`epsilon` must be smaller than `alpha`"):
        PersistentItemsOperator(0.5, 0.6, 10, "15 minutes")
    assert PersistentItemsOperator(0.5, 0.1, 10, "15 minutes").slot_length == 900_000_000
