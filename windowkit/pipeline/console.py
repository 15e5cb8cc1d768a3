"""The console sink: a step's first rows as a table a person reads.

Spark's ``show`` prints every column, the adapter's bookkeeping ones included, and doubles
with their binary noise (``403.40000000000003``); this prints the result's own columns and
each number at the precision it was computed to.
"""

from __future__ import annotations

import math

#: Columns of a result that tell where Spark computed a row, not what it says: a Count-Min
#: snapshot's view and shard.
INTERNAL_COLUMNS = ("view", "shard")


def plain_number(value: float) -> str:
    """A double without the noise of its binary form (12 significant digits).

    Examples
    --------
    >>> plain_number(403.40000000000003), plain_number(40340.0), plain_number(1e-9)
    ('403.4', '40340.0', '1e-09')
    >>> plain_number(float("nan"))
    'NaN'
    """
    if math.isnan(value):
        return "NaN"
    return repr(float(f"{value:.12g}"))


def console_table(rows, n: int) -> str:
    """The first ``n`` rows of the DataFrame ``rows`` as text, without
    :data:`INTERNAL_COLUMNS`.

    Examples
    --------
    >>> df = spark.createDataFrame([(0, 3, "d1", 403.40000000000003)],
    ...                            "view int, shard int, dst string, threshold double")
    >>> print(console_table(df, 10))
    dst  threshold
     d1      403.4
    """
    shown = rows.drop(*[c for c in INTERNAL_COLUMNS if c in rows.columns])
    table = shown.limit(n).toPandas()
    if table.empty:
        return "(no rows) " + ", ".join(shown.columns)
    return table.to_string(index=False, float_format=plain_number)
