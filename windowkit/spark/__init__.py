"""The Spark layer: DataFrame functions for batch and Structured Streaming.

>>> from windowkit.spark import threshold_frames, windowed_count_min, persistent_items

Each function's module is imported on first use: a Spark Python worker unpickling one
technique's processor then imports only that technique (and numba only if it needs it), which
shortens the first micro-batch of a streaming query.
"""

from __future__ import annotations

import importlib
from typing import Any

from windowkit.spark.python_worker import install_zip_directory_cache

# Spark's Python workers unpickle windowkit's functions, so they import this package before
# their next task's cache invalidation: see windowkit.spark.python_worker.
install_zip_directory_cache()

_MODULE_OF = {
    "estimate_frequency": "countmin",
    "heavy_hitters": "countmin",
    "merge_count_min": "countmin",
    "multi_granular": "multigranular",
    "recurring_items": "multigranular",
    "split_reports": "multigranular",
    "windowed_count_min": "countmin",
    "split_rejected": "frames",
    "aggregate_frames": "framings",
    "boundary_frames": "framings",
    "custom_frames": "framings",
    "delta_frames": "framings",
    "longest_frame": "framings",
    "fill_frames": "fill",
    "threshold_frames": "frames",
    "exact_persistent_items": "persistent",
    "persistent_items": "persistent",
    "split_persistent": "persistent",
    "windowkit_session": "session",
    "check_time_outliers": "time_outliers",
    "split_detections": "widening",
    "split_filled": "fill",
    "widen_detect": "widening",
}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        msg = f"module 'windowkit.spark' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(f"windowkit.spark.{_MODULE_OF[name]}"), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
