"""The contract every stateful class keeps, run over every class in windowkit's registry.

The classes come from :func:`windowkit.core.registry.state_classes`, their examples from
:data:`windowkit.testing.contract.EXAMPLES`: a registered class without an example fails here.
Technique-specific behaviour (answers against the brute-force references) is tested apart.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from windowkit.core.operator import EventTimeRunner, StreamOperator
from windowkit.core.registry import state_classes
from windowkit.testing.contract import EXAMPLES, Example
from windowkit.testing.streams import shuffled_within

CLASSES = state_classes()
TAGS = sorted(CLASSES)
IDS = [CLASSES[tag].__name__ for tag in TAGS]


def _example(tag: str) -> Example:
    assert tag in EXAMPLES, (f"{CLASSES[tag].__qualname__} ({tag!r}) is registered but has no "
                             f"example in windowkit.testing.contract.EXAMPLES")
    return EXAMPLES[tag]


def canonical(outputs: list, exact: bool = False) -> list:
    """Every output row, in a stable order, floats to 10 significant digits (``exact``: to
    the last bit)."""
    frames = [o for o in outputs if isinstance(o, pd.DataFrame) and len(o)]
    if not frames:
        return []
    frame = pd.concat(frames, ignore_index=True)
    rows = []
    for row in frame.itertuples(index=False):
        rows.append(tuple(f"{v:.10g}" if isinstance(v, float) and not exact else repr(v)
                          for v in row))
    return sorted(rows)


def _fed(ex: Example, batches=None) -> tuple[object, list]:
    obj = ex.make()
    outputs = [ex.feed(obj, b) for b in (ex.batches if batches is None else batches)]
    return obj, outputs


def _again(obj):
    return type(obj).from_bytes(obj.to_bytes())


def test_every_registered_class_has_an_example():
    missing = [f"{CLASSES[t].__qualname__} ({t})" for t in TAGS if t not in EXAMPLES]
    assert not missing, f"registered classes without a contract example: {missing}"
    assert set(EXAMPLES) <= set(TAGS), "examples of classes that are not registered"


@pytest.mark.parametrize("tag", TAGS, ids=IDS)
def test_bytes_and_pickle_round_trip(tag):
    ex = _example(tag)
    for obj in (ex.make(), _fed(ex, ex.batches[:2])[0]):
        blob = obj.to_bytes()
        for copy in (type(obj).from_bytes(blob), pickle.loads(pickle.dumps(obj))):
            assert type(copy) is type(obj)
            assert copy.to_bytes() == blob
            assert ex.view(copy) == ex.view(obj)
            rest = [ex.feed(copy, b) for b in ex.batches[2:]] + [ex.finish(copy)]
            twin = type(obj).from_bytes(blob)
            assert canonical(rest) == canonical([ex.feed(twin, b) for b in ex.batches[2:]]
                                                + [ex.finish(twin)])


@pytest.mark.parametrize("tag", TAGS, ids=IDS)
def test_split_invariance_with_bytes_round_trips_between_the_parts(tag):
    ex = _example(tag)
    whole = ex.make()
    expected = [ex.feed(whole, ex.whole()), ex.finish(whole)]
    obj, outputs = ex.make(), []
    for batch in ex.batches:
        outputs.append(ex.feed(obj, batch))
        obj = _again(obj)
    outputs.append(ex.finish(obj))
    assert canonical(outputs) == canonical(expected)
    assert ex.view(obj) == ex.view(whole)
    assert any(len(o) for o in expected if isinstance(o, pd.DataFrame)) or ex.view(whole), (
        "the example must produce something to compare")


OPERATORS = [t for t in TAGS if issubclass(CLASSES[t], StreamOperator)]


@pytest.mark.parametrize("tag", OPERATORS, ids=[CLASSES[t].__name__ for t in OPERATORS])
@pytest.mark.parametrize("seed", [0, 1])
def test_disorder_within_the_watermark_gives_the_ordered_output(tag, seed):
    ex = _example(tag)
    assert ex.max_delay is not None, f"{CLASSES[tag].__name__}'s example needs a max_delay"
    rows = ex.whole()
    ordered = ex.make()
    expected = [ordered.process(rows), ordered.finish()]
    arrived = shuffled_within(rows, ex.max_delay, seed=seed)
    runner, outputs, seen = EventTimeRunner(ex.make()), [], None
    for piece in np.array_split(np.arange(len(arrived)), 4):
        batch = arrived.iloc[piece].reset_index(drop=True)
        seen = int(batch["time"].max()) if seen is None else max(seen, int(batch["time"].max()))
        out, late = runner.push(batch, watermark=seen - ex.max_delay)
        assert not len(late)
        outputs.append(out)
        runner = _again(runner)
    outputs.append(runner.finish())
    assert canonical([ex.settled(o) for o in outputs]) == canonical(
        [ex.settled(o) for o in expected])


def _tied(rows: pd.DataFrame, tick: int = 6) -> pd.DataFrame:
    """The example's rows with several at each time: times coarsened to multiples of
    ``tick`` (window bounds moved with their row's time), and float values given random
    fractions, so that summing them in another order may give another float."""
    coarse = rows["time"] // tick * tick
    moved = rows["time"] - coarse
    rows = rows.assign(time=coarse)
    for name in ("window_start", "window_end"):
        if name in rows:
            rows[name] = rows[name] - moved
    if "value" in rows and rows["value"].dtype == np.float64:
        rows["value"] = rows["value"] + np.random.default_rng(7).random(len(rows))
    assert rows["time"].duplicated().sum() > len(rows) // 2, "the rows must tie"
    return rows


def _ties_permuted(rows: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The rows in time order, the rows of each time in a random order."""
    shuffled = rows.sample(frac=1.0, random_state=seed)
    return shuffled.sort_values("time", kind="stable").reset_index(drop=True)


@pytest.mark.parametrize("tag", OPERATORS, ids=[CLASSES[t].__name__ for t in OPERATORS])
def test_rows_tied_at_one_time_give_one_output_whatever_their_arrival_order(tag):
    """Rows at one time reach the operator in an order of their contents: the output of the
    same rows, arrived in any order, in one batch or in pieces, is the same to the last bit."""
    ex = _example(tag)
    rows = _tied(ex.whole())
    found = []
    for seed in range(4):
        arrived = _ties_permuted(rows, seed)
        runner = EventTimeRunner(ex.make())
        found.append(canonical([ex.settled(o) for o in (runner.push(arrived)[0],
                                                        runner.finish())], exact=True))
        # in pieces, rows also delayed; a tie is released at once when the watermark passes it
        arrived = shuffled_within(arrived, ex.max_delay, seed=seed)
        runner, outputs, seen = EventTimeRunner(ex.make()), [], None
        for piece in np.array_split(np.arange(len(arrived)), 5):
            batch = arrived.iloc[piece].reset_index(drop=True)
            seen = max(int(batch["time"].max()), seen or int(batch["time"].max()))
            out, late = runner.push(batch, watermark=seen - ex.max_delay)
            assert not len(late)
            outputs.append(out)
            runner = _again(runner)
        outputs.append(runner.finish())
        found.append(canonical([ex.settled(o) for o in outputs], exact=True))
    assert found[0], "the example must produce something to compare"
    for other in found[1:]:
        assert other == found[0]


MERGEABLE = [t for t in TAGS if t in EXAMPLES and EXAMPLES[t].shards]


@pytest.mark.parametrize("tag", MERGEABLE, ids=[CLASSES[t].__name__ for t in MERGEABLE])
def test_merge_is_associative_and_commutative_with_the_empty_object_as_identity(tag):
    ex = _example(tag)
    a, b, c = (_fed(ex, shard)[0] for shard in ex.shards)

    def merged(*parts):
        out = _again(parts[0])
        for part in parts[1:]:
            out.merge(_again(part))
        return out

    ab_c = merged(merged(a, b), c)
    a_bc = merged(a, merged(b, c))
    assert ex.view(ab_c) == ex.view(a_bc)
    assert ex.view(merged(a, b)) == ex.view(merged(b, a))
    for identity in (merged(a, ex.make()), merged(ex.make(), a)):
        assert ex.view(identity) == ex.view(a)


def test_importing_all_of_the_core_leaves_pyspark_out():
    """The core and what is built on it alone: the references, data sets and test helpers."""
    code = ("import importlib, pkgutil, sys, windowkit.core, windowkit.testing\n"
            "import windowkit.reference, windowkit.datasets\n"
            "for pkg in (windowkit.core, windowkit.testing, windowkit.reference,\n"
            "            windowkit.datasets):\n"
            "    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
            "        importlib.import_module(info.name)\n"
            "import windowkit.core.registry as r; r.state_classes()\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
