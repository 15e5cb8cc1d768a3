"""SQL predicates and expressions checked against an input's columns before Spark starts.

``--when`` of ``windowkit frames``, ``--aggregate`` of ``windowkit fill`` and a pipeline step's
predicates and expressions are read with sqlglot's Spark dialect: an expression that does not
parse, names a column the input does not have (from its header or schema, with a "did you
mean"), or, for a predicate, is plainly not true or false (arithmetic, a literal, a cast to
another type, or a column whose type the input's schema gives as other than boolean) is one
line before Spark starts. Spark's own analysis still checks everything once it runs.
"""

from __future__ import annotations

from windowkit.cli.common import InputInfo, missing_column

#: The node types of arithmetic (their value is a number or a string, never true or false).
_ARITHMETIC = ("Add", "Sub", "Mul", "Div", "Mod", "IntDiv", "Neg", "BitwiseAnd", "BitwiseOr",
               "BitwiseXor", "BitwiseNot", "BitwiseLeftShift", "BitwiseRightShift", "DPipe")
_BOOLEAN_TYPES = ("bool", "boolean")


def find_column(info: InputInfo, name: str) -> str | None:
    """The column of ``info`` that ``name`` refers to (Spark resolves names without regard to
    case), or None.

    Examples
    --------
    >>> find_column(InputInfo("r.csv", "csv", ("a", "B")), "b")
    'B'
    """
    lowered = name.lower()
    return next((c for c in info.columns or () if c.lower() == lowered), None)


def _type_of(info: InputInfo, name: str) -> str | None:
    column = find_column(info, name)
    return None if column is None or info.types is None else info.types.get(column)


def check_sql(expression: str | None, option: str, info: InputInfo,
              predicate: bool = True) -> None:
    """Raise ``ValueError`` naming ``option`` if ``expression`` does not parse as Spark SQL,
    names a column ``info`` lacks or, for a ``predicate``, is plainly not true or false.

    Examples
    --------
    >>> cols = InputInfo("r.parquet", "parquet", ("router", "loss_rate"), {"loss_rate": "double"})
    >>> check_sql("loss_rate > 0.003 AND router = 'r1'", "--when", cols)
    >>> check_sql("loss_rat > 0.003", "--when", cols)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `--when` 'loss_rat > 0.003' names column 'loss_rat', ... 'loss_rate'?); ...
    >>> check_sql("loss_rate", "--when", cols)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `--when` 'loss_rate' is not a predicate (true or false): column loss_rate is ...
    """
    if expression is None:
        return
    node = parse(expression, option)
    _check_names(node, expression, option, info)
    if predicate:
        reason = not_boolean(node, info)
        if reason is not None:
            msg = f"`{option}` {expression!r} is not a predicate (true or false): {reason}"
            raise ValueError(msg)


def parse(expression: str, option: str):
    """``expression`` parsed by sqlglot's Spark dialect; ``ValueError`` naming ``option``.

    Examples
    --------
    >>> parse("loss_rate >", "--when")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `--when` 'loss_rate >' is not valid Spark SQL: ...
    """
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        node = sqlglot.parse_one(expression, dialect="spark")
    except SqlglotError as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        msg = f"`{option}` {expression!r} is not valid Spark SQL: {detail}"
        raise ValueError(msg) from exc
    if node is None:
        msg = f"`{option}` is empty; give a Spark SQL expression"
        raise ValueError(msg)
    return node


def _check_names(node, expression: str, option: str, info: InputInfo) -> None:
    from sqlglot import exp

    if info.columns is None:
        return
    for reference in node.find_all(exp.Column):
        # `a.b` is field b of column a (a struct): the column is the first part
        name = reference.parts[0].name
        if not name or find_column(info, name) is not None:
            continue
        raise ValueError(missing_column(f"`{option}` {expression!r}", name, info))


def not_boolean(node, info: InputInfo) -> str | None:
    """Why the expression ``node`` (parsed) is plainly not true or false, or None when it is,
    or may be (a function's result, whose type Spark knows).

    Examples
    --------
    >>> cols = InputInfo("t", "parquet", ("v", "ok"), {"v": "int64", "ok": "bool"})
    >>> not_boolean(parse("v * 2", "x"), cols), not_boolean(parse("ok OR v > 1", "x"), cols)
    ("'v * 2' computes a value", None)
    >>> not_boolean(parse("ok AND v", "x"), cols), not_boolean(parse("abs(v)", "x"), cols)
    ('column v is of type int64', None)
    """
    from sqlglot import exp

    if isinstance(node, exp.Paren):
        return not_boolean(node.this, info)
    if isinstance(node, exp.Connector):
        return not_boolean(node.left, info) or not_boolean(node.right, info)
    if isinstance(node, exp.Not):
        return not_boolean(node.this, info)
    if isinstance(node, (exp.Predicate, exp.Boolean)):
        return None
    if isinstance(node, exp.Column) and len(node.parts) == 1:
        kind = _type_of(info, node.name)
        if kind is not None and kind.lower() not in _BOOLEAN_TYPES:
            return f"column {node.name} is of type {kind}"
        return None
    if isinstance(node, exp.Cast) and not node.to.is_type("boolean"):
        return f"{node.sql(dialect='spark')!r} is of type {node.to.sql(dialect='spark').lower()}"
    if type(node).__name__ in _ARITHMETIC:
        return f"{node.sql(dialect='spark')!r} computes a value"
    if isinstance(node, exp.Literal):
        return f"{node.sql(dialect='spark')} is a {'string' if node.is_string else 'number'}"
    return None
