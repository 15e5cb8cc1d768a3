"""What a pipeline step's ``sql`` query reads, found by sqlglot's Spark dialect before Spark starts.

A ``sql`` step reads the pipeline's sources and earlier steps by name (each is a temporary view
under its own name when the step runs), and may call table functions (windowkit's
``windowkit_<function>``, Spark's ``range``, ...). Its tables are what the query's ``FROM``,
``JOIN`` and subqueries name, less the names its ``WITH`` defines; a table function's
``TABLE(name)`` argument is a table too, and is reported apart because Spark refuses a stream
there.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class QueryTables:
    """The names a query reads, each once, in the order they first appear.

    Attributes
    ----------
    tables : tuple of str
        Every table the query reads (qualified names as written: ``db.t``).
    table_arguments : tuple of str
        The tables read inside a table function's ``TABLE(...)`` argument.
    functions : tuple of str
        The table functions it calls (``windowkit_threshold_frames``, ``range``).
    """

    tables: tuple[str, ...]
    table_arguments: tuple[str, ...]
    functions: tuple[str, ...]


def query_tables(sql: str) -> QueryTables:
    """The tables and table functions of one Spark SQL query.

    Parameters
    ----------
    sql : str
        One query (no ``;``-separated second statement).

    Returns
    -------
    QueryTables
        What the query reads.

    Raises
    ------
    ValueError
        When ``sql`` is empty, holds more than one statement or does not parse, saying where.

    Examples
    --------
    >>> found = query_tables('''
    ...     WITH long AS (SELECT * FROM loss_frames WHERE `end` - start > INTERVAL 2 MINUTES)
    ...     SELECT * FROM long JOIN windowkit_threshold_frames(TABLE(routers), time => 'time',
    ...         when => 'loss_rate > 0.003') f USING (router)''')
    >>> found.tables, found.table_arguments, found.functions
    (('loss_frames', 'routers'), ('routers',), ('windowkit_threshold_frames',))
    >>> query_tables("SELECT * FROM")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the query is not valid Spark SQL at line 1, column 13: ...
    """
    from sqlglot import exp

    tree = _parse(sql)
    defined = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    found: list[tuple[int, str, bool]] = []  # (where in the text, name, in a TABLE argument)
    functions: dict[str, None] = {}
    for node in tree.walk():
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous | exp.Func):
            functions[_function_name(node.this)] = None
        elif isinstance(node, exp.Table) and node.name and node.name.lower() not in defined:
            found.append((_start(node), _dotted(node), _in_table_argument(node)))
        elif _is_table_argument(node) and isinstance(node.expressions[0], exp.Column):
            # TABLE(name): sqlglot reads the name as a column of a function named TABLE
            column = node.expressions[0]
            if column.parts[-1].name.lower() not in defined:
                found.append((_start(column), _dotted(column), True))
    found.sort(key=lambda entry: entry[0])
    tables = dict.fromkeys(name for _, name, _ in found)
    arguments = dict.fromkeys(name for _, name, argument in found if argument)
    return QueryTables(tuple(tables), tuple(arguments), tuple(functions))


def _parse(sql: str):
    """``sql`` as one sqlglot tree; ``ValueError`` for nothing, two statements, bad syntax."""
    import sqlglot
    from sqlglot.errors import ParseError, SqlglotError

    try:
        statements = [s for s in sqlglot.parse(sql, dialect="spark") if s is not None]
    except ParseError as exc:
        found = exc.errors[0] if exc.errors else {}
        where = (f" at line {found['line']}, column {found['col']}"
                 if found.get("line") else "")
        detail = _token_text(found.get("description") or str(exc).strip().splitlines()[0])
        msg = f"the query is not valid Spark SQL{where}: {detail}"
        raise ValueError(msg) from exc
    except SqlglotError as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        msg = f"the query is not valid Spark SQL: {detail}"
        raise ValueError(msg) from exc
    if not statements:
        msg = "the query is empty; give one Spark SQL query (SELECT ...)"
        raise ValueError(msg)
    if len(statements) > 1:
        msg = (f"the query holds {len(statements)} statements; give one (no `;` between two "
               "queries)")
        raise ValueError(msg)
    return statements[0]


def _token_text(detail: str) -> str:
    """sqlglot's description with its tokens as their text (``<Token ... text: FROM ...>``).

    Examples
    --------
    >>> _token_text("Expected table name but got <Token token_type: TokenType.SENTINEL, "
    ...             "text: SENTINEL, line: 1>")
    'Expected table name but got the end of the query'
    """
    import re

    def shown(found: re.Match) -> str:
        text = found.group(1)
        return "the end of the query" if text == "SENTINEL" else repr(text)

    return re.sub(r"<Token token_type: [^,]*, text: ([^,]*),[^>]*>", shown, detail)


def _dotted(node) -> str:
    """A table's name as written, its parts joined by dots (``db.t``)."""
    return ".".join(part.name for part in node.parts)


def _start(node) -> int:
    """Where ``node``'s last name part starts in the query's text (sqlglot's token meta)."""
    return node.parts[-1].meta.get("start", 0) if node.parts else 0


def _function_name(node) -> str:
    from sqlglot import exp

    return node.name if isinstance(node, exp.Anonymous) else node.sql_name().lower()


def _is_table_argument(node) -> bool:
    from sqlglot import exp

    return (isinstance(node, exp.Anonymous) and node.name.upper() == "TABLE"
            and len(node.expressions) == 1)


def _in_table_argument(node) -> bool:
    """Whether ``node`` lies inside a ``TABLE(...)`` argument (``TABLE(SELECT ... FROM t)``)."""
    parent = node.parent
    while parent is not None:
        if _is_table_argument(parent):
            return True
        parent = parent.parent
    return False


__all__ = ["QueryTables", "query_tables"]
