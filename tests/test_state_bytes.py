"""State bytes (issue #16, point 10): corrupt bytes fail as StateFormatError naming the class."""

from __future__ import annotations

import pandas as pd
import pytest

from windowkit.core.operator import EventTimeRunner
from windowkit.core.persistence.operator import PersistentItemsOperator
from windowkit.core.serialization import pack_state, unpack_state
from windowkit.core.sketches import SimpleWindowCM
from windowkit.core.sketches.operator import WindowedCountMinOperator


def _with_operator_class(blob: bytes, path: str) -> bytes:
    """The runner's bytes as an older windowkit wrote them: the operator under ``path``."""
    meta, arrays = unpack_state(blob, EventTimeRunner.FORMAT_TAG, EventTimeRunner.FORMAT_VERSION)
    meta["operator_class"] = path
    return pack_state(EventTimeRunner.FORMAT_TAG, EventTimeRunner.FORMAT_VERSION, meta, arrays)


@pytest.mark.parametrize(
    ("operator", "old_path", "item"),
    [
        (WindowedCountMinOperator(SimpleWindowCM(10, depth=2, width=8), snapshot_every=2),
         "windowkit.core.countmin_operator:WindowedCountMinOperator", "a"),
        (PersistentItemsOperator(alpha=0.5, epsilon=0.2, window=4, slot_length=10),
         "windowkit.core.persistent_operator:PersistentItemsOperator", "a"),
    ],
)
def test_moved_operator_old_module_path_still_resolves(operator, old_path, item):
    runner = EventTimeRunner(operator)
    runner.push(pd.DataFrame({"time": [5, 1, 12], "item": [item] * 3}), watermark=4)
    old = _with_operator_class(runner.to_bytes(), old_path)
    restored = EventTimeRunner.from_bytes(old)
    assert type(restored.operator) is type(operator)
    assert restored.to_bytes() == runner.to_bytes()
    pd.testing.assert_frame_equal(restored.finish(), runner.finish())
