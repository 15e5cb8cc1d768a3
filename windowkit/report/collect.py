"""Small collects for the report: aggregate or filter in Spark, bring few rows to the driver.

A step's input can hold millions of rows; nothing here calls ``toPandas()`` on one. Every
function reduces in the JVM first (counts, a key's rows, time buckets) and bounds what reaches
Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.report.figures import DPI, WIDTH
from windowkit.spark.columns import quoted
from windowkit.spark.event_time import event_time

#: The most points one line of a figure gets, a point per pixel of the figure's width;
#: beyond, rows are reduced per time bucket (more points would be drawn over each other).
MAX_POINTS = int(WIDTH * DPI)


def time_micros(df: DataFrame, name: str, time_unit: str | None = None) -> Column:
    """``df[name]`` as µs since 1970, read as windowkit reads event times.

    An integer column counts ``time_unit`` (microseconds when None: the report draws what it
    is given rather than refuse a column the step accepted).

    Examples
    --------
    >>> df = spark.createDataFrame([(3,)], "t long")
    >>> df.select(time_micros(df, "t", "s")).first()[0]
    3000000
    """
    dtype = df.schema[name].dataType
    if isinstance(dtype, T.IntegralType):
        return event_time(df, name, time_unit or "us").micros()
    return event_time(df, name).micros()


def is_empty(df: DataFrame | None) -> bool:
    """Whether a step's result holds no row (None counts as empty).

    Examples
    --------
    >>> is_empty(None), is_empty(spark.range(0)), is_empty(spark.range(2))
    (True, True, False)
    """
    return df is None or df.isEmpty()


@dataclass(frozen=True)
class ShownKey:
    """A step's key as the report shows it: one value per key, and the label it goes by.

    A step's ``by`` is a column, a list of them (a composite key) or absent (one global key,
    the results' ``key`` column); its result and its input hold the key columns under the same
    names. Build one with :func:`shown_key`.
    """

    names: tuple[str, ...]
    keyed: bool

    @property
    def label(self) -> str:
        """``router``, ``site, router``, or ``key`` for the global key."""
        return ", ".join(self.names)

    def column(self) -> Column:
        """The key as one value: the column itself, or the columns' text joined by ``", "``."""
        if len(self.names) == 1:
            return quoted(self.names[0])
        return F.concat_ws(", ", *[quoted(n).cast("string") for n in self.names])

    def present(self, df: DataFrame) -> bool:
        """True when ``df`` holds the key columns (a step's input, say)."""
        return self.keyed and all(n in df.columns for n in self.names)


def shown_key(by: str | list[str] | None) -> ShownKey:
    """The key of a step whose ``by`` is ``by`` (a name, a list of names or None).

    Examples
    --------
    >>> shown_key(["site", "router"]).label, shown_key(None).label, shown_key("pid").keyed
    ('site, router', 'key', True)
    """
    if not by:
        return ShownKey(("key",), False)
    return ShownKey((by,) if isinstance(by, str) else tuple(by), True)


def top_key(keys: pd.Series, weight: pd.Series | None = None) -> Any:
    """The key with the most rows (or the largest sum of ``weight``) of a collected column;
    ties go to the smallest key; None if there is no non-null key.

    Examples
    --------
    >>> top_key(pd.Series(["a", "b", "b", None]))
    'b'
    >>> top_key(pd.Series(["a", "b"]), weight=pd.Series([5, 3]))
    'a'
    """
    measure = pd.Series(1 if weight is None else weight.to_numpy(), index=keys.index)
    totals = measure[keys.notna()].groupby(keys[keys.notna()]).sum()
    if not len(totals):
        return None
    return sorted(totals.index[totals == totals.max()])[0]


def series(df: DataFrame, micros: Column, value: Column, *, max_points: int = MAX_POINTS,
           reduce: str = "max") -> pd.DataFrame:
    """``(t, value)`` rows in time order (``t`` in µs), at most about ``max_points`` of them.

    Longer series are reduced in Spark to one row per time bucket (the bucket's ``max`` by
    default: a peak stays visible; or ``"avg"``), ``t`` the bucket's first instant.

    Examples
    --------
    >>> df = spark.createDataFrame([(t, float(t % 7)) for t in range(100)], "t long, v double")
    >>> s = series(df, F.col("t"), F.col("v"), max_points=10)
    >>> len(s) <= 10, float(s["value"].max())
    (True, 6.0)
    """
    rows = df.select(micros.alias("t"), value.cast("double").alias("value")).filter(
        F.col("t").isNotNull())
    # one job when the series is short (the usual case); bucketing needs two more
    out = rows.limit(max_points + 1).toPandas()
    if len(out) > max_points:
        stats = rows.agg(F.min("t").alias("lo"), F.max("t").alias("hi")).first()
        width = max(1, -(-(stats["hi"] - stats["lo"] + 1) // max_points))
        bucket = F.floor((F.col("t") - F.lit(stats["lo"])) / F.lit(width))
        agg = F.max("value") if reduce == "max" else F.avg("value")
        out = rows.groupBy(bucket.alias("b")).agg(agg.alias("value")).select(
            (F.lit(stats["lo"]) + F.col("b") * F.lit(width)).cast("long").alias("t"),
            "value").toPandas()
    out = out.astype({"t": "int64", "value": "float64"})
    return out.sort_values("t", kind="stable").reset_index(drop=True)
