"""State classes are found by name in windowkit's registry, never by a module path in bytes.

The ``tests/data/old_state/*.bin`` files were written by windowkit 7328167, whose bytes named
classes by module path (``tests/data/old_state/make.py``); they must read back, through the
registry, as the state today's windowkit builds from the same rows.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

import pandas as pd
import pytest

import windowkit.core
from windowkit.core.frames import CustomFramer, IncreasingTrend
from windowkit.core.frames._engine import SequenceFramer
from windowkit.core.operator import EventTimeRunner, StreamOperator
from windowkit.core.registry import lookup, registered_name, state_classes
from windowkit.core.serialization import StateFormatError, pack_state, unpack_state
from windowkit.core.widening import EpisodeDetector, WindowWidening
from windowkit.testing.frames import open_frame_ids, with_todays_ids

OLD = Path(__file__).parent / "data" / "old_state"
sys.path.insert(0, str(OLD))
builders = importlib.import_module("builders")
STATES = builders.states()
FILES = sorted(OLD.glob("*.bin"))


def _repacked(blob: bytes, cls: type, edit) -> bytes:
    meta, arrays = unpack_state(blob, cls.FORMAT_TAG, cls.FORMAT_VERSION)
    edit(meta)
    return pack_state(cls.FORMAT_TAG, cls.FORMAT_VERSION, meta, arrays)


def _finish(state) -> pd.DataFrame:
    return state.finish().reset_index(drop=True)


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_bytes_that_named_modules_read_back_through_the_registry(path):
    old = path.read_bytes()
    now = STATES[path.stem.removesuffix("_older_path")]
    restored = type(now).from_bytes(old)
    assert type(restored) is type(now)
    if isinstance(now, EventTimeRunner):
        assert type(restored.operator) is type(now.operator)
    # the same state: stable bytes once written again, and the same output to the end
    # (not byte for byte with `now`: threshold frames on the shared engine write the open
    # frame's fragment count as -1 where older code wrote 0, with the same output; a frame
    # open in older bytes keeps the id older code gave it)
    assert type(now).from_bytes(restored.to_bytes()).to_bytes() == restored.to_bytes()
    framer = getattr(restored, "operator", restored)
    still_open = open_frame_ids(framer) if isinstance(framer, SequenceFramer) else None
    expected = _finish(type(now).from_bytes(now.to_bytes()))
    if still_open is not None:
        expected = with_todays_ids(expected, still_open)
    pd.testing.assert_frame_equal(_finish(restored), expected)


def test_old_fixtures_cover_every_class_path_older_bytes_held():
    stems = {f.stem for f in FILES}
    assert {"runner_countmin_older_path", "runner_persistent_older_path",
            "custom_user_framing", "widening_episode"} <= stems


def test_state_bytes_name_no_module():
    for state in STATES.values():
        meta, _ = unpack_state(state.to_bytes(), state.FORMAT_TAG, state.FORMAT_VERSION)
        assert "windowkit." not in repr(meta) and ":" not in str(meta.get("detector", ""))


@pytest.mark.parametrize("path", ["os:system", "builtins:dict", "windowkit.core.chunks:COUNT",
                                  "windowkit.core.operator:EventTimeRunner", "NOSUCHTG", 7])
def test_a_runner_naming_another_operator_class_is_refused(path):
    blob = STATES["runner_delta"].to_bytes()
    bad = _repacked(blob, EventTimeRunner, lambda meta: meta.update(operator_class=path))
    with pytest.raises(StateFormatError, match="EventTimeRunner"):
        EventTimeRunner.from_bytes(bad)


def test_a_nested_state_of_an_unregistered_tag_is_refused():
    runner = STATES["runner_delta"]
    meta, arrays = unpack_state(runner.to_bytes(), "RUNNER", 1)
    inner = bytearray(arrays["operator"].tobytes())
    inner[5:13] = b"NOSUCHTG"
    arrays["operator"] = pd.array(list(inner), dtype="uint8").to_numpy()
    with pytest.raises(StateFormatError, match="'NOSUCHTG', which is not in windowkit's registry"):
        EventTimeRunner.from_bytes(pack_state("RUNNER", 1, meta, arrays))


@pytest.mark.parametrize("name", ["os.path:join", "windowkit.core.frames.custom:Framing",
                                  "collections:OrderedDict", "NoSuchFraming"])
def test_a_framing_or_detector_naming_anything_unregistered_is_refused(name):
    framer = CustomFramer(IncreasingTrend())
    bad = _repacked(framer.to_bytes(), CustomFramer,
                    lambda meta: meta.update(framing={"name": name, "params": {}}))
    with pytest.raises(StateFormatError, match="framing .* not in windowkit's registry"):
        CustomFramer.from_bytes(bad)
    old_style = _repacked(framer.to_bytes(), CustomFramer,
                          lambda meta: meta.update(framing={"class": name, "params": {}}))
    with pytest.raises(StateFormatError, match="not in windowkit's registry"):
        CustomFramer.from_bytes(old_style)
    op = WindowWidening(EpisodeDetector("a"), base=10, max_length=2, levels=1)
    bad = _repacked(op.to_bytes(), WindowWidening, lambda meta: meta.update(detector=name))
    with pytest.raises(StateFormatError, match="detector .* not in windowkit's registry"):
        WindowWidening.from_bytes(bad)


def test_nothing_named_in_bytes_is_imported():
    name = "colorsys"  # a module nothing here imports
    sys.modules.pop(name, None)
    framer = CustomFramer(IncreasingTrend())
    bad = _repacked(framer.to_bytes(), CustomFramer,
                    lambda meta: meta.update(framing={"class": f"{name}:X", "params": {}}))
    with pytest.raises(StateFormatError):
        CustomFramer.from_bytes(bad)
    assert name not in sys.modules


def test_every_stateful_class_of_the_core_is_registered():
    """A class under windowkit.core with a format tag and a decoder is in the registry."""
    registered = set(state_classes().values())
    for info in pkgutil.walk_packages(windowkit.core.__path__, "windowkit.core."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (cls.__module__ == module.__name__ and "FORMAT_TAG" in cls.__dict__
                    and cls.FORMAT_TAG and callable(getattr(cls, "from_bytes", None))):
                assert cls in registered, f"{cls.__qualname__} is not registered"
                assert registered_name(cls) == cls.FORMAT_TAG


def test_registry_lookup_checks_the_kind():
    with pytest.raises(StateFormatError, match="not in windowkit's registry"):
        lookup("IncreasingTrend", StreamOperator, "operator")
    assert lookup("PWWIDEN", StreamOperator, "operator") is WindowWidening
