"""State bytes (issue #16, point 10): corrupt bytes fail as StateFormatError naming the class.

Every stateful class in windowkit's registry (:mod:`windowkit.core.registry`) is covered, so a
new class is covered without editing this file. Bytes are crafted with a valid header and checksum
(:func:`pack_state`), so they reach the class's own decoding: whatever is wrong in them (meta
keys, meta types, arrays missing or of another dtype or shape, random JSON) must surface as
:class:`StateFormatError` naming the class, never a KeyError, TypeError or numpy error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkit.core.frames import ThresholdFramer
from windowkit.core.operator import EventTimeRunner
from windowkit.core.persistence import (
    ExactPersistence,
    PersistentItemsSketch,
    SlidingPersistentItemsSketch,
)
from windowkit.core.persistence.operator import PersistentItemsOperator
from windowkit.core.registry import state_classes
from windowkit.core.serialization import StateFormatError, pack_state, unpack_state
from windowkit.core.sketches import (
    CountMin,
    PerfectWindowCM,
    ProportionalWindowCM,
    SimpleWindowCM,
    SplitterWindowCM,
)
from windowkit.core.sketches.operator import WindowedCountMinOperator

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _stateful_classes() -> list[type]:
    """windowkit's stateful classes (its registry's), in a fixed order."""
    found = {f"{cls.__module__}.{cls.__qualname__}": cls for cls in state_classes().values()}
    return [found[name] for name in sorted(found)]


CLASSES = _stateful_classes()


# -- valid states, one per known class (non-empty arrays where the class has any) ---------------
def _sketch(cls: type, **params: Any) -> Any:
    sketch = cls(16, depth=2, width=8, **params)
    sketch.update(["a", "b", "a", "c"] * 5)
    return sketch


def _persistence(obj: Any) -> Any:
    obj.update(["a", "b", "a", "c", "a"], [0, 0, 1, 2, 3])
    return obj


def _framer() -> ThresholdFramer:
    framer = ThresholdFramer("2 rows", fragment_every="1 rows")
    framer.update(np.array([0, 10, 20, 30]), [1, 1, 0, 1], key=np.array(["a", "b", "a", "a"]))
    return framer


def _countmin_operator() -> WindowedCountMinOperator:
    op = WindowedCountMinOperator(SimpleWindowCM(10, depth=2, width=8), snapshot_every=2)
    op.process(pd.DataFrame({"time": [1, 2, 3], "item": ["a", "b", "a"]}))
    return op


def _persistent_operator() -> PersistentItemsOperator:
    op = PersistentItemsOperator(alpha=0.5, epsilon=0.2, window=4, slot_length=10)
    op.process(pd.DataFrame({"time": [1, 12, 25, 27], "item": ["a", "a", "b", "a"]}))
    return op


def _countmin() -> CountMin:
    cm = CountMin(2, 8, seed=1)
    cm.update([1, 2, 2, 5])
    return cm


def _runner() -> EventTimeRunner:
    runner = EventTimeRunner(_framer())
    runner.push(pd.DataFrame({"key": ["a", "b"], "time": [50, 40], "value": [1, 0]}), watermark=35)
    return runner


EXAMPLES: dict[type, Callable[[], Any]] = {
    CountMin: _countmin,
    PerfectWindowCM: lambda: _sketch(PerfectWindowCM),
    SimpleWindowCM: lambda: _sketch(SimpleWindowCM),
    ProportionalWindowCM: lambda: _sketch(ProportionalWindowCM),
    SplitterWindowCM: lambda: _sketch(SplitterWindowCM, tau=0.2, mu=1.5),
    WindowedCountMinOperator: _countmin_operator,
    PersistentItemsSketch: lambda: _persistence(
        PersistentItemsSketch(alpha=0.5, epsilon=0.2, n=8, delta=0.1)),
    SlidingPersistentItemsSketch: lambda: _persistence(
        SlidingPersistentItemsSketch(alpha=0.5, epsilon=0.2, n=8)),
    ExactPersistence: lambda: _persistence(ExactPersistence(n=8, window="sliding")),
    PersistentItemsOperator: _persistent_operator,
    ThresholdFramer: _framer,
    EventTimeRunner: _runner,
}


def _ids(classes: list[type]) -> list[str]:
    return [cls.__name__ for cls in classes]


def _raises_naming(cls: type, blob: bytes) -> StateFormatError:
    with pytest.raises(StateFormatError) as info:
        cls.from_bytes(blob)
    assert re.search(rf"\b{cls.__name__}\b", str(info.value)), str(info.value)
    return info.value


def _decodes_or_fails_cleanly(cls: type, blob: bytes) -> None:
    """The only acceptable outcomes: an instance of ``cls``, or StateFormatError naming it."""
    try:
        obj = cls.from_bytes(blob)
    except StateFormatError as exc:
        assert re.search(rf"\b{cls.__name__}\b", str(exc)), str(exc)
    else:
        assert isinstance(obj, cls)


def _parts(cls: type) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    return unpack_state(EXAMPLES[cls]().to_bytes(), cls.FORMAT_TAG, cls.FORMAT_VERSION)


def _pack(cls: type, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> bytes:
    return pack_state(cls.FORMAT_TAG, cls.FORMAT_VERSION, meta, arrays)


# -- discovery ----------------------------------------------------------------------------------
def test_discovery_finds_every_known_stateful_class():
    assert set(EXAMPLES) <= set(CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=_ids(CLASSES))
def test_every_from_bytes_goes_through_the_shared_decoder(cls):
    assert getattr(cls.from_bytes, "decodes_state", False), (
        f"{cls.__name__}.from_bytes lacks @state_decoder")


# -- any class, no example needed: crafted meta from nothing -------------------------------------
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.floats(-1e3, 1e3)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=8,
)


@pytest.mark.parametrize("cls", CLASSES, ids=_ids(CLASSES))
@SETTINGS
@given(meta=st.dictionaries(st.text(max_size=8), JSON, max_size=4))
def test_random_json_meta_fails_naming_the_class(cls, meta):
    if cls in EXAMPLES:  # keys of a real state could make random meta half right
        real, _ = _parts(cls)
        meta = {f"not-{k}": v for k, v in meta.items() if k in real} | {
            k: v for k, v in meta.items() if k not in real}
    _raises_naming(cls, _pack(cls, meta, {}))


@pytest.mark.parametrize("cls", CLASSES, ids=_ids(CLASSES))
@pytest.mark.parametrize("version_offset", [-1, 1])
def test_other_format_versions_are_refused(cls, version_offset):
    version = cls.FORMAT_VERSION + version_offset
    meta, arrays = _parts(cls) if cls in EXAMPLES else ({}, {})
    error = _raises_naming(cls, pack_state(cls.FORMAT_TAG, version, meta, arrays))
    assert f"format version {version}" in str(error)
    assert f"version {cls.FORMAT_VERSION} only" in str(error)


# -- known classes: mutations of a real state -----------------------------------------------------
KNOWN = [cls for cls in CLASSES if cls in EXAMPLES]


@pytest.mark.parametrize("cls", KNOWN, ids=_ids(KNOWN))
def test_renamed_meta_keys_fail_naming_the_class(cls):
    meta, arrays = _parts(cls)
    _raises_naming(cls, _pack(cls, {f"wrong_{k}": v for k, v in meta.items()}, arrays))
    _raises_naming(cls, _pack(cls, {}, arrays))


@pytest.mark.parametrize("cls", [c for c in KNOWN if _parts(c)[1]],
                         ids=_ids([c for c in KNOWN if _parts(c)[1]]))
def test_removed_arrays_fail_naming_the_class(cls):
    meta, _ = _parts(cls)
    _raises_naming(cls, _pack(cls, meta, {}))


def _leaf_paths(value: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaf_paths(v, (*path, k))] or [path]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaf_paths(v, (*path, i))] or [path]
    return [path]


def _replaced(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replaced(value[head], rest, new)}
    return [_replaced(v, rest, new) if i == head else v for i, v in enumerate(value)]


def _other_type(old: Any) -> st.SearchStrategy:
    kinds = {
        "none": st.none(), "bool": st.booleans(), "int": st.integers(-1000, 1000),
        "float": st.floats(-1e3, 1e3).filter(lambda x: x != int(x)), "str": st.text(max_size=6),
        "list": st.lists(st.integers(-3, 3), max_size=3),
        "dict": st.dictionaries(st.text(max_size=4), st.integers(-3, 3), max_size=2),
    }
    old_kind = ("none" if old is None else "bool" if isinstance(old, bool)
                else type(old).__name__ if type(old).__name__ in kinds else "dict")
    return st.one_of([s for kind, s in kinds.items() if kind != old_kind])


@st.composite
def mutated_state(draw: st.DrawFn, cls: type) -> bytes:
    meta, arrays = _parts(cls)
    how = draw(st.sampled_from(["meta type", "drop array", "array dtype", "array shape"]
                               if arrays else ["meta type"]))
    if how == "meta type":
        path = draw(st.sampled_from(_leaf_paths(meta)))
        old = meta
        for part in path:
            old = old[part]
        meta = _replaced(meta, path, draw(_other_type(old)))
    else:
        name = draw(st.sampled_from(sorted(arrays)))
        arr = arrays.pop(name)
        if how == "array dtype":
            dtype = draw(st.sampled_from(["<i1", "<u8", "<f8", "<c16", "|b1", "<i4", "U"]))
            if dtype == "U":
                arrays[name] = np.array([f"x{i}" for i in range(arr.size)], dtype=object)
            elif np.dtype(dtype) != arr.dtype:
                arrays[name] = np.zeros(arr.shape, dtype=dtype)
            else:
                arrays[name] = np.zeros(arr.shape, dtype="<f4")
        elif how == "array shape":
            size = draw(st.integers(0, arr.size + 3).filter(lambda n: n != arr.size))
            flat = np.resize(arr.ravel(), size) if arr.size else np.zeros(size, arr.dtype)
            arrays[name] = flat.reshape(-1, 1) if draw(st.booleans()) else flat
    return _pack(cls, meta, arrays)


@pytest.mark.parametrize("cls", KNOWN, ids=_ids(KNOWN))
@pytest.mark.filterwarnings("ignore:Casting complex values")  # some decoders cast arrays
@SETTINGS
@given(data=st.data())
def test_mutated_state_decodes_or_fails_naming_the_class(cls, data):
    _decodes_or_fails_cleanly(cls, data.draw(mutated_state(cls)))


def test_nested_state_errors_name_the_outer_class():
    meta, arrays = _parts(WindowedCountMinOperator)
    arrays["sketch"] = arrays["sketch"][:-1]  # the inner sketch's bytes are truncated
    error = _raises_naming(WindowedCountMinOperator, _pack(WindowedCountMinOperator, meta, arrays))
    assert "SimpleWindowCM" in str(error) or "CMSIMPLE" in str(error)
    assert isinstance(error.__cause__, StateFormatError)
