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
from windowkit.techniques import spark_modules as _spark_modules

# Spark's Python workers unpickle windowkit's functions, so they import this package before
# their next task's cache invalidation: see windowkit.spark.python_worker.
install_zip_directory_cache()

#: Public functions that belong to no technique: the session, the check of a time column, the
#: split of any function's output into results and rejected rows, and the SQL table functions.
_SHARED = {"windowkit_session": "session", "check_time_outliers": "time_outliers",
           "split_rejected": "rejected", "register_sql": "sql"}
#: Every public function -> its module under windowkit.spark (the techniques' from their
#: descriptors, :mod:`windowkit.techniques`).
_MODULE_OF = {**_spark_modules(), **_SHARED}

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
