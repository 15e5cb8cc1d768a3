"""Multi-granular sliding windows (Patroumpas & Sellis): many ranges and slides in one operator.

>>> from windowkit.core.multigranular import MultiGranularAggregator, MultiGranularSpec
>>> MultiGranularSpec.parse("RANGES 1 HOUR, 1 MINUTE SLIDES 5 MINUTES, 1 SECOND").n_levels
2
"""

from windowkit.core.multigranular.aggregator import (
    AGGREGATES,
    CELL_COLUMNS,
    AggregatorConfig,
    MultiGranularAggregator,
)
from windowkit.core.multigranular.distinct import DistinctSketches
from windowkit.core.multigranular.recurring import RecurringItems
from windowkit.core.multigranular.spec import Level, MultiGranularSpec

__all__ = ["AGGREGATES", "CELL_COLUMNS", "AggregatorConfig", "DistinctSketches", "Level",
           "MultiGranularAggregator", "MultiGranularSpec", "RecurringItems"]
