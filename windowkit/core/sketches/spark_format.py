"""Count-Min matrices serialized by Apache Spark's ``CountMinSketch`` (the ``count_min_sketch``
aggregate's bytes), read into the core's matrices.

Spark writes, big-endian: the version (int, 1), the total count (long), depth and width (ints),
the ``depth`` row multipliers (longs), then the table row by row (longs). A sketch built with
the core's ``"spark"`` hash family and the same seed has, cell for cell, the same table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from windowkit.core.sketches._hashing import spark_multipliers


def spark_count_min_counts(blob: bytes, config: Any) -> np.ndarray:
    """The count matrix of a sketch serialized by Spark's ``CountMinSketch``, checked against
    ``config`` (a :class:`CountMinConfig` or a windowed sketch's configuration): same shape,
    and Spark's hash family with the same seed.

    Examples
    --------
    >>> from windowkit.core.sketches import CountMin
    >>> cm = CountMin(1, 2, seed=3, hashing="spark")
    >>> header = np.array([1], ">i4").tobytes() + np.array([5], ">i8").tobytes()
    >>> shape = np.array([1, 2], ">i4").tobytes()
    >>> table = np.array([[2, 3]], ">i8").tobytes()
    >>> blob = header + shape + spark_multipliers(3, 1).astype(">i8").tobytes() + table
    >>> spark_count_min_counts(blob, cm.config).tolist()
    [[2, 3]]
    >>> spark_count_min_counts(blob[:-8], cm.config)
    Traceback (most recent call last):
    ...
    ValueError: not a version-1 Spark Count-Min sketch of shape (1, 2) (36 bytes)
    """
    depth, width = config.depth, config.width
    expected = 20 + 8 * depth * (width + 1)
    version = int(np.frombuffer(blob[:4], dtype=">i4")[0]) if len(blob) >= 20 else None
    shape = tuple(np.frombuffer(blob[12:20], dtype=">i4").tolist()) if version else None
    if len(blob) != expected or version != 1 or shape != (depth, width):
        msg = (f"not a version-1 Spark Count-Min sketch of shape {(depth, width)} "
               f"({len(blob)} bytes)")
        raise ValueError(msg)
    multipliers = np.frombuffer(blob[20:20 + 8 * depth], dtype=">i8")
    if config.hashing != "spark" or not np.array_equal(
            multipliers, spark_multipliers(config.seed, depth)):
        msg = f"the Spark sketch does not hash like {config!r}"
        raise ValueError(msg)
    table = np.frombuffer(blob[20 + 8 * depth:], dtype=">i8")
    return table.astype(np.int64).reshape(depth, width)
