"""The Spark layer: DataFrame functions for batch and Structured Streaming.

>>> from windowkit.spark import threshold_frames, windowed_count_min, persistent_items
"""

from windowkit.spark.countmin import (
    estimate_frequency,
    heavy_hitters,
    merge_count_min,
    windowed_count_min,
)
from windowkit.spark.frames import split_rejected, threshold_frames
from windowkit.spark.persistent import (
    exact_persistent_items,
    persistent_items,
    split_persistent,
)
from windowkit.spark.session import windowkit_session

__all__ = [
    "estimate_frequency",
    "exact_persistent_items",
    "heavy_hitters",
    "merge_count_min",
    "persistent_items",
    "split_persistent",
    "split_rejected",
    "threshold_frames",
    "windowed_count_min",
    "windowkit_session",
]
