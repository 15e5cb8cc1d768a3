"""A value column (an item, a time) as ``pyspark.sql.functions`` takes one: a name or a
``Column``.

Like a grouping key (:mod:`windowkit.spark.keys`), the column is resolved once, on the
caller's DataFrame, before windowkit adds a column of its own: a name that is not there fails
with Spark's own error, whose "did you mean" lists the caller's columns only. An output
column that carries it back is named as Spark names it in a ``select`` (``"ip"``,
``"lower(host)"``) and has its type.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

#: What a function's item or time parameter takes.
ColumnLike = str | Column


@dataclass(frozen=True)
class Resolved:
    """A column resolved on a DataFrame: build one with :func:`resolve_column`.

    Attributes
    ----------
    column : Column
        The column or expression, to use on that DataFrame (or one derived from it that
        keeps its columns).
    name : str
        The name Spark gives it in a ``select``: the output column's name.
    type : DataType
        Its type.
    """

    column: Column
    name: str
    type: T.DataType


def resolve_column(df: DataFrame, column: ColumnLike, param: str) -> Resolved:
    """``column`` (a name of ``df``, or a ``Column`` over its columns) resolved on ``df``.

    Parameters
    ----------
    df : DataFrame
        The caller's input, before any column of windowkit's own is added (Spark's error for
        a name it lacks then suggests only the caller's columns).
    column : str or Column
        A name (as ``F.col`` reads it) or any expression of ``df``'s columns.
    param : str
        The parameter's name, for errors.

    Returns
    -------
    Resolved

    Raises
    ------
    ValueError
        ``column`` of another type.

    Examples
    --------
    >>> df = spark.createDataFrame([("A", 1)], "host string, n int")
    >>> item = resolve_column(df, F.lower("host"), "item")
    >>> item.name, item.type.simpleString()
    ('lower(host)', 'string')
    >>> resolve_column(df, "n", "item").type
    IntegerType()
    >>> resolve_column(df, ["host"], "item")
    Traceback (most recent call last):
    ...
    ValueError: `item` must be a column name or a Column; got ['host'] (list)
    """
    if not isinstance(column, str | Column):
        msg = (f"`{param}` must be a column name or a Column; got {column!r} "
               f"({type(column).__name__})")
        raise ValueError(msg)
    if isinstance(column, str) and column in df.columns:
        # a plain name: the DataFrame's cached schema, no analysis
        return Resolved(quoted(column), column, df.schema[column].dataType)
    expr = F.col(column) if isinstance(column, str) else column
    field = df.select(expr).schema.fields[0]  # Spark's own error for a name df lacks
    return Resolved(expr, field.name, field.dataType)


def quoted(name: str) -> Column:
    """The column named ``name`` exactly (``F.col`` would read ``a.b`` as a field of ``a``).

    Examples
    --------
    >>> spark.createDataFrame([(1,)], "`a.b` int").select(quoted("a.b")).columns
    ['a.b']
    """
    return F.col(quoted_name(name))


def quoted_name(name: str) -> str:
    """``name`` as a SQL identifier, quoted: the column of exactly that name in SQL text.

    Examples
    --------
    >>> quoted_name("a.b"), quoted_name("x`y")
    ('`a.b`', '`x``y`')
    """
    return "`" + name.replace("`", "``") + "`"


def row_hash_sql(schema: T.StructType) -> str:
    """SQL text of a ``long`` hash of a row's contents (``xxhash64`` of its columns, a column
    Spark cannot hash, such as a map, by its JSON text, and which of them are null, since
    Spark's hash skips a null): an order of rows that is the same whatever the input's order,
    partitioning or surface (a DataFrame, or a SQL table function's ``TABLE``), for rows a
    function must take in some fixed order.

    Examples
    --------
    >>> row_hash_sql(T.StructType.fromDDL("m map<string, int>"))
    "xxhash64(to_json(named_struct('v', `m`)), concat(if(`m` IS NULL, '1', '0')))"
    """
    names = [quoted_name(f.name) for f in schema.fields]
    parts = [f"to_json(named_struct('v', {name}))" if _unhashable(f.dataType) else name
             for name, f in zip(names, schema.fields, strict=True)]
    nulls = ", ".join(f"if({name} IS NULL, '1', '0')" for name in names)
    return f"xxhash64({', '.join(parts)}, concat({nulls}))"


def _unhashable(dtype: T.DataType) -> bool:
    """Whether Spark's hash functions refuse ``dtype`` (a map or a variant, also nested)."""
    if isinstance(dtype, T.MapType | T.VariantType):
        return True
    if isinstance(dtype, T.ArrayType):
        return _unhashable(dtype.elementType)
    if isinstance(dtype, T.StructType):
        return any(_unhashable(f.dataType) for f in dtype.fields)
    return False
