"""Grouping keys as ``pyspark.sql.functions`` takes them: a column name, a ``Column``, or a
list of them (a composite key).

A key is resolved once, on the caller's DataFrame, before windowkit adds a column of its own:
a name that is not there fails with Spark's own error, whose "did you mean" lists the caller's
columns only. Each key column keeps the name Spark gives it in a ``select`` (``"router"``,
``"upper(host)"``) and its type, and comes back in the output under that name and type.

A key travels to the operator as one value: a single key column as it is (cast to text, or a
long where the operator takes integer keys), a composite one as the JSON text of a struct of
its columns, written in UTC with microseconds, which reads back to the very values for every
type Spark can group by. A row with a null in any key column belongs to no key: it is
rejected as ``malformed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowkit.core.operator import KEY
from windowkit.spark.columns import quoted_name

#: What a function's ``by`` takes.
KeyLike = str | Column | Sequence[str | Column] | None

# The text of a composite key: timestamps in UTC with microseconds, whatever the session's
# time zone (the default writes milliseconds, in the session's zone).
_JSON_OPTIONS = {"timeZone": "UTC", "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
                 "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"}


@dataclass(frozen=True)
class Key:
    """A resolved grouping key: the output columns it gives and the one value it travels as.

    Build one with :func:`resolve_key`. The global key (no ``by``) has no columns and travels
    as the empty text; its output column is ``key``.

    Attributes
    ----------
    names : tuple of str
        The key columns' names in the output (the names Spark gives them in a ``select``).
    types : tuple of DataType
        Their types.
    value : Column
        The one value the key travels as (see the module docstring).
    missing : Column
        True where the row has no key (a null in any key column).
    plain : str or None
        The input column that is the key as it is (a single key given by name), else None.
    columns : tuple of Column
        Each key column's expression, on the DataFrame the key was resolved on.
    """

    names: tuple[str, ...]
    types: tuple[T.DataType, ...]
    value: Column
    missing: Column
    plain: str | None = None
    columns: tuple[Column, ...] = ()

    @property
    def integral(self) -> bool:
        """True for a single key column of an integer type (it can travel as a long)."""
        return len(self.types) == 1 and isinstance(self.types[0], T.IntegralType)

    def travelling_as(self, column: str | Column) -> Key:
        """This key, where ``column`` of a derived DataFrame already holds its value.

        Examples
        --------
        >>> df = spark.createDataFrame([("a", 1)], "site string, router int")
        >>> cells = df.select(resolve_key(df, ["site", "router"]).value.alias("k"))
        >>> key = resolve_key(df, ["site", "router"]).travelling_as("k")
        >>> cells.select(*key.restored(F.col("k"))).first()
        Row(site='a', router=1)
        """
        value = F.col(column) if isinstance(column, str) else column
        return replace(self, value=value, missing=value.isNull(), plain=None)

    def restored(self, shipped: Column, metadata: dict | None = None) -> list[Column]:
        """The output's key columns from the value the key travelled as (text, or a long),
        each with ``metadata`` if given.

        Examples
        --------
        >>> df = spark.createDataFrame([("a", 1)], "site string, router int")
        >>> key = resolve_key(df, F.col("router"))
        >>> df.select(key.value.cast("string").alias("t")).select(*key.restored(F.col("t")))
        DataFrame[router: int]
        """
        if not self.names:
            return [shipped.alias(KEY, metadata=metadata)]
        if len(self.names) == 1:
            return [shipped.cast(self.types[0]).alias(self.names[0], metadata=metadata)]
        schema = T.StructType([T.StructField(n, t, True)
                               for n, t in zip(self.names, self.types, strict=True)])
        parsed = F.from_json(shipped, schema, _JSON_OPTIONS)
        return [parsed.getField(n).alias(n, metadata=metadata) for n in self.names]


def resolve_key(df: DataFrame, by: KeyLike, param: str = "by") -> Key:
    """``by`` resolved on ``df``: a column name, a ``Column``, a list of them, or None.

    Parameters
    ----------
    df : DataFrame
        The caller's input, before any column of windowkit's own is added (Spark's error for a
        name it lacks then suggests only the caller's columns).
    by : str, Column, list of them, or None
        The key: a name is a column of ``df`` (as ``F.col`` reads it), a Column any
        expression of its columns; a list is a composite key. None: one global key.
    param : str
        The parameter's name, for errors.

    Returns
    -------
    Key

    Raises
    ------
    ValueError
        ``by`` of another type, an empty list, or two key columns of one name.

    Examples
    --------
    >>> df = spark.createDataFrame([("a", 1)], "site string, router int")
    >>> key = resolve_key(df, ["site", F.col("router") + 1])
    >>> key.names, [t.simpleString() for t in key.types]
    (('site', '(router + 1)'), ['string', 'int'])
    >>> df.select(key.value).first()[0]
    '{"site":"a","(router + 1)":2}'
    >>> resolve_key(df, 3)
    Traceback (most recent call last):
    ...
    ValueError: `by` must be a column name, a Column or a list of them; got 3 (int)
    """
    if by is None:
        return Key((), (), F.lit(""), F.lit(False))
    items = key_items(by)
    if not items or not all(isinstance(c, str | Column) for c in items):
        msg = (f"`{param}` must be a column name, a Column or a list of them; got {by!r} "
               f"({type(by).__name__})")
        raise ValueError(msg)
    columns = [F.col(c) if isinstance(c, str) else c for c in items]
    fields = df.select(*columns).schema.fields  # Spark's own error for a name df lacks
    names = tuple(f.name for f in fields)
    if len(set(names)) < len(names):
        msg = f"`{param}` names a column twice: {list(names)}"
        raise ValueError(msg)
    types = tuple(f.dataType for f in fields)
    missing = reduce(lambda a, b: a | b, [c.isNull() for c in columns])
    if len(columns) == 1:
        plain = items[0] if isinstance(items[0], str) and items[0] in df.columns else None
        return Key(names, types, columns[0], missing, plain, tuple(columns))
    value = F.to_json(F.struct(*[c.alias(n) for c, n in zip(columns, names, strict=True)]),
                      _JSON_OPTIONS)
    return Key(names, types, value, missing, columns=tuple(columns))


def key_text_sql(names: tuple[str, ...] | list[str]) -> str:
    """SQL text of the value a key of the columns ``names`` travels as (see
    :func:`resolve_key`): a single column's text, a composite key's JSON, ``''`` for the
    global key (no names), for a plan Python builds no Column of (a SQL table function's).

    Examples
    --------
    >>> key_text_sql(["router"])
    'CAST(`router` AS STRING)'
    >>> key_text_sql([])
    "''"
    """
    if not names:
        return "''"
    if len(names) == 1:
        return f"CAST({quoted_name(names[0])} AS STRING)"
    fields = ", ".join(f"'{k}', {quoted_name(k)}" for k in names)
    options = ", ".join(f"'{k}', \"{v}\"" for k, v in _JSON_OPTIONS.items())
    return f"to_json(named_struct({fields}), map({options}))"


def key_items(by: KeyLike) -> list:
    """``by``'s items, as given: none for None, one for a name or a Column, a list's own.

    Examples
    --------
    >>> key_items(None), key_items("site"), key_items(("site", "router"))
    ([], ['site'], ['site', 'router'])
    """
    if by is None:
        return []
    return list(by) if isinstance(by, list | tuple) else [by]
