"""Rejected rows: one convention for every function of :mod:`windowkit.spark`.

A function that can reject a row (a null or unparsable time or key, a value it cannot use, a
row behind the watermark) returns it among its results with two extra columns: ``rejected``,
the reason (``malformed``, ``late``; null on a result row), and ``detail``, the input row as
JSON (null on a result row). :func:`split_rejected` separates the two kinds whatever the
function.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from windowkit.spark.adapter import DETAIL_OUT, REJECTED

Splitter = Callable[[DataFrame], tuple[DataFrame, DataFrame]]


def split_rejected(result: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Split any windowkit function's output into (results, rejected rows).

    Parameters
    ----------
    result : DataFrame
        The output of a function of :mod:`windowkit.spark`, batch or streaming.

    Returns
    -------
    (DataFrame, DataFrame)
        The result rows without the ``rejected`` and ``detail`` columns, and the rejected rows
        with every column (``rejected`` holds the reason, ``detail`` the input row as JSON).
        The output of a function that rejects nothing (no ``rejected`` column) is all results;
        its rejected rows are then an empty DataFrame of the same columns plus those two.

    Examples
    --------
    >>> from windowkit.spark import threshold_frames
    >>> df = spark.createDataFrame([(1, 5.0), (2, 7.0), (None, 9.0)], "t long, x double")
    >>> frames, rejected = split_rejected(threshold_frames(df, "t", "x > 1", time_unit="s"))
    >>> frames.count(), rejected.select("rejected", "detail").first()
    (1, Row(rejected='malformed', detail='{"x":9.0}'))
    """
    if REJECTED not in result.columns:
        nothing = result.filter(F.lit(False)).withColumns(
            {REJECTED: F.lit(None).cast("string"), DETAIL_OUT: F.lit(None).cast("string")})
        return result, nothing
    kept = F.col(REJECTED).isNull()
    return result.filter(kept).drop(REJECTED, DETAIL_OUT), result.filter(~kept)


def deprecated_splitter(name: str) -> Splitter:
    """A deprecated alias of :func:`split_rejected`, warning that ``name`` is going away.

    Examples
    --------
    >>> import warnings
    >>> split_old = deprecated_splitter("split_old")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = split_old(spark.range(1))
    >>> str(caught[0].message)
    'split_old is deprecated and will be removed in the next release; use split_rejected'
    """

    @functools.wraps(split_rejected)
    def alias(result: DataFrame) -> tuple[DataFrame, DataFrame]:
        msg = (f"{name} is deprecated and will be removed in the next release; use "
               "split_rejected")
        warnings.warn(msg, DeprecationWarning, stacklevel=2)
        return split_rejected(result)

    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = (f"Deprecated alias of :func:`windowkit.spark.split_rejected`, kept for one "
                     f"release: it warns (``DeprecationWarning``) and splits alike.\n\n"
                     f"    Examples\n    --------\n"
                     f"    >>> from windowkit.spark import {name}\n    ")
    return alias


__all__ = ["deprecated_splitter", "split_rejected"]
