"""States of every class whose bytes carried a class path, built with public API only.

``make.py`` ran these with windowkit at commit 7328167 (the last whose bytes named modules) to
write the ``*.bin`` files beside it; ``tests/test_state_registry.py`` builds the same states
with today's windowkit and checks the old bytes read back as the same state.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from windowkit.core.frames import CustomFramer, DeltaFramer, Framing, ThresholdFramer
from windowkit.core.multigranular import MultiGranularAggregator
from windowkit.core.operator import EventTimeRunner
from windowkit.core.persistence.operator import PersistentItemsOperator
from windowkit.core.sketches import SimpleWindowCM
from windowkit.core.sketches.operator import WindowedCountMinOperator
from windowkit.core.widening import EpisodeDetector, WindowWidening

FRAME_ROWS = pd.DataFrame({"key": ["a", "b", "a", "a", "b"], "time": [1, 2, 3, 5, 8],
                           "value": [1.0, 3.0, 2.0, 4.0, 1.0]})
ITEM_ROWS = pd.DataFrame({"time": [5, 1, 12, 14], "item": ["a", "b", "a", "a"]})
CALLS = pd.DataFrame({"key": ["k", "k", "j"], "time": [1, 2, 3], "call": ["a", "b", "a"]})


#: Module paths windowkit wrote before its operators moved (re-exporting modules kept them
#: importable): ``make.py`` also writes these states with the older path.
OLDER_OPERATOR_PATHS = {
    "runner_countmin": "windowkit.core.countmin_operator:WindowedCountMinOperator",
    "runner_persistent": "windowkit.core.persistent_operator:PersistentItemsOperator",
}


class Falling(Framing):
    """A user's framing: maximal runs of falling values."""

    state_size = 1

    def decide(self, state: np.ndarray, value: float, time: int) -> int:
        """Join while the value falls."""
        falling = not np.isnan(state[0]) and value < state[0]
        state[0] = value
        return 1 if falling else 3


def _runner(operator, rows: pd.DataFrame, watermark: int) -> EventTimeRunner:
    runner = EventTimeRunner(operator)
    runner.push(rows, watermark=watermark)
    return runner


def states() -> dict[str, object]:
    """Every state, by file name."""
    widening = WindowWidening(EpisodeDetector("a\nb"), base=10, max_length=2, levels=3)
    widening.process(CALLS)
    custom = CustomFramer(Falling())
    custom.process(FRAME_ROWS)
    return {
        "runner_threshold": _runner(ThresholdFramer(min_duration="2 rows"),
                                    FRAME_ROWS.assign(value=FRAME_ROWS.value > 1.5), 3),
        "runner_delta": _runner(DeltaFramer(2.0), FRAME_ROWS, 3),
        # bytes written before `closed` existed had the paper's scopes
        "runner_multigranular": _runner(MultiGranularAggregator(levels=[(4, 2), (8, 4)],
                                                                closed="right"),
                                        FRAME_ROWS, 3),
        "runner_countmin": _runner(WindowedCountMinOperator(SimpleWindowCM(10, depth=2, width=8),
                                                            snapshot_every=2), ITEM_ROWS, 4),
        "runner_persistent": _runner(PersistentItemsOperator(alpha=0.5, epsilon=0.2, window=4,
                                                             slot_length=10), ITEM_ROWS, 4),
        "custom_user_framing": custom,
        "widening_episode": widening,
    }
