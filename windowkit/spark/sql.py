"""windowkit's functions as Spark SQL table functions.

:func:`register_sql` registers ``windowkit_<function>`` for every function whose descriptor
declares a :class:`~windowkit.technique.SqlSignature`. Nothing here is written per technique:
a table function takes its DataFrame function's own parameters (names and defaults read from
the function's signature), builds its operator with the builder the function itself calls,
and runs it with the adapter's own run of a batch shard
(:func:`~windowkit.spark.adapter.run_to_end`), so the rows agree with the DataFrame function's
by construction::

    SELECT * FROM windowkit_threshold_frames(
      TABLE(readings), time => 'time', when => 'loss_rate > 0.003', by => 'router',
      min_duration => '3 rows')

Each call is a Python UDTF (``udtf(useArrow=False)``) whose ``analyze`` runs when Spark
analyses the query: it checks the parameters (a mistake is one ``ValueError`` naming the
parameter and the value, as the DataFrame function raises it), gives the output schema (the
key columns under their own names and types, the times in the time column's kind), and asks
Spark for the projection the adapter would make (the key's text, the event time in µs, the
operator's inputs, a malformed row's JSON; a row the function's own check refuses is
malformed) and for the partitioning: rows are hashed into ``shards`` groups, one UDTF instance
each, as the adapter's shards, by what the operator routes by (the key, or an input of its
own), or all go to one instance (the global key, or an operator that ends with the input:
one instance's last row is then the input's); one instance per key would cost Python a call
per key. A function that picks each row's shard itself declares how (:class:`Sites`): the
shard is then a column of the projection, and one instance takes every row and runs one
operator per shard, as the adapter does (ordered by time and then by a hash of the row's
contents where the operator's time is a row's rank in time order). A call therefore takes
no ``PARTITION BY`` of its own. What differs between
functions is declared, not written here: the signature's inputs (parameters, SQL defaults, or
a function of the operator and the table), its row check, and its output columns (operator
columns, renamed, or computed from the operator's output).

The UDTFs are not Arrow-optimized (``useArrow=False``): Spark's Arrow-optimized UDTF still
calls ``eval`` once a row, and measured about six times slower (threshold frames over 300 K
readings on two cores: 83 s against 14 s); Spark 4.1's vectorized ``arrow_udtf``, which takes
whole batches, allows no ``analyze``, and so no schema or partitioning chosen per call.

Streams take the DataFrame functions: Spark refuses a streaming ``TABLE`` argument when the
query starts (it would sort a stream to partition it), and a UDTF, which ends its input at
each micro-batch and keeps no state, could not frame one anyway.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Row, SparkSession
from pyspark.sql import types as T
from pyspark.sql.functions import udtf
from pyspark.sql.udtf import (
    AnalyzeArgument,
    AnalyzeResult,
    OrderingColumn,
    PartitioningColumn,
    SelectedColumn,
)

from windowkit.core.operator import INPUT_END, KEY, TIME
from windowkit.core.validation import check_int
from windowkit.spark.adapter import (
    _SPARK_TYPES,
    DETAIL_OUT,
    FOLD_LIMIT,
    REJECTED,
    SHARD_OUT,
    default_shards,
    run_to_end,
)
from windowkit.spark.columns import quoted_name, row_hash_sql
from windowkit.spark.event_time import EventTime, time_kind
from windowkit.spark.frames import predicate_code_sql
from windowkit.spark.keys import key_text_sql
from windowkit.technique import StepFunction, load
from windowkit.techniques import step_functions

#: A table function's name is this and its DataFrame function's.
SQL_PREFIX = "windowkit_"
#: The columns the projection Spark makes for a table function hands it.
_KEY_COLUMN, _TIME_COLUMN, _DETAIL_COLUMN = "wk_key", "wk_time", "wk_detail"
_SHARD_COLUMN = "wk_shard"
_KEY_VALUE = "wk_key_"  # and the key column's position: the key's own values
_INPUT = "wk_input_"  # and the operator input's name
#: Output types of a SQL table function's times, by the time column's kind.
_TIME_TYPES = {"instant": T.TimestampType(), "wall_clock": T.TimestampNTZType(),
               "integer": T.LongType()}
#: How an operator input of each declared type reaches the operator from a SQL call.
_ARROW_INPUTS = {"float64": pa.float64(), "int64": pa.int64(), "string": pa.string(),
                 "category": pa.string(), "bool": pa.bool_(), "code": pa.int8(),
                 "binary": pa.binary(), "timestamp": pa.int64(), "duration": pa.int64()}


def sql_functions() -> dict[str, StepFunction]:
    """The functions that are SQL table functions, by their SQL name.

    Examples
    --------
    >>> sorted(sql_functions())[:2]
    ['windowkit_aggregate_frames', 'windowkit_boundary_frames']
    """
    return {SQL_PREFIX + f.name: f for f in step_functions().values() if f.sql is not None}


def register_sql(spark: SparkSession) -> list[str]:
    """Register windowkit's SQL table functions in ``spark`` (classic or Spark Connect).

    Parameters
    ----------
    spark : SparkSession
        The session whose SQL calls them.

    Returns
    -------
    list of str
        The names registered: ``windowkit_<function>`` for each function of
        :mod:`windowkit.spark` that SQL can call.

    Examples
    --------
    >>> names = register_sql(spark)
    >>> "windowkit_threshold_frames" in names
    True
    >>> df = spark.createDataFrame([("s1", t, x) for t, x in enumerate([30, 33, 34, 30], 1)],
    ...                            "sensor string, t long, temp int")
    >>> df.createOrReplaceTempView("temps")
    >>> spark.sql(\"\"\"SELECT sensor, start, `end` FROM windowkit_threshold_frames(
    ...     TABLE(temps), time => 't', time_unit => 's', when => 'temp > 32',
    ...     by => 'sensor')\"\"\").collect()
    [Row(sensor='s1', start=2, end=4)]
    """
    # the number of shards a DataFrame function takes by default, known on the driver only
    shards = default_shards(spark.range(1))
    functions = sql_functions()
    for name, function in functions.items():
        spark.udtf.register(name, udtf(_table_function(function.name, shards), useArrow=False))
    return list(functions)


def _table_function(function: str, shards: int) -> type:
    """The UDTF class of ``function``: :class:`_TableFunction` with its ``analyze``."""
    analyze = functools.partial(analyze_call, function, shards)  # (``shards``: the default)
    return type(f"{SQL_PREFIX}{function}", (_TableFunction,),
                {"analyze": staticmethod(analyze), "__module__": __name__})


@dataclass(frozen=True)
class Sites:
    """Where the rows of a function that picks each row's shard itself go (a
    :class:`~windowkit.technique.SqlSignature`'s ``sites``), as one SQL call runs them: one
    instance takes every row and runs one operator per shard, as the adapter runs them.

    Attributes
    ----------
    shard : str
        SQL text of a row's shard, an integer in ``[0, shards)`` over the table's columns; a
        null one: a counted row's rank (below) modulo ``shards``, a rejected row's 0.
    shards : int
        The number of shards.
    ranked : int or None
        If given, the operator's time of a counted row is its rank among the counted rows
        (in time order, rows at the same time in the order of their contents) times
        ``ranked`` µs, not its event time.

    Examples
    --------
    >>> Sites("pmod(xxhash64(`router`), 4)", 4).ranked is None
    True
    """

    shard: str
    shards: int
    ranked: int | None = None


@dataclass(frozen=True)
class Plan:
    """What ``analyze`` found of one SQL call, for its UDTF instances.

    Attributes
    ----------
    factory : callable
        The operator's factory, built from the call's parameters by the function's builder.
    inputs : dict
        The operator's inputs -> their declared types.
    keys : tuple of str
        The key's columns (none for the global key).
    clock : EventTime
        The time column's kind, to give the output's times back in.
    columns : tuple of (name, source, kind)
        The output's columns after the key, each with the operator's column it holds (or a
        function of the operator's output giving its values) and its kind: that in the
        operator's output schema (None for ``rejected`` and ``detail``), or a Spark type.
    keyed : bool
        Whether the output starts with the key (False: the operator gives no key).
    sites : Sites or None
        The shards the function picks for the rows itself, one operator each (None: the
        instance's rows go to one operator).
    ends_with_input : bool
        Whether the operator ends at the input's last time (given in an ``input_end``
        column), not at its own last row.
    """

    factory: Any
    inputs: dict[str, str]
    keys: tuple[str, ...]
    clock: EventTime
    columns: tuple[tuple[str, Any, Any], ...]
    keyed: bool = True
    sites: Sites | None = None
    ends_with_input: bool = False


@dataclass
class PlannedCall(AnalyzeResult):
    """``analyze``'s result, with the :class:`Plan` Spark hands each UDTF instance."""

    plan: Plan | None = None


def analyze_call(function: str, shards_default: int, /, *args: AnalyzeArgument,
                 **kwargs: AnalyzeArgument) -> PlannedCall:
    """Spark's ``analyze`` of a SQL call of ``function``: its parameters checked, its output
    schema, the projection and partitioning Spark makes for it.

    Examples
    --------
    >>> table = AnalyzeArgument(T.StructType.fromDDL("r string, t timestamp, v double"),
    ...                         None, True, False)
    >>> def constant(value):
    ...     return AnalyzeArgument(T.StringType(), value, False, True)
    >>> planned = analyze_call("delta_frames", 2, table, time=constant("t"),
    ...                        value=constant("v"), x=constant(0.5), by=constant("r"))
    >>> planned.schema.fieldNames()[:3], planned.partitionBy[0].name
    (['r', 'frame_id', 'start'], 'pmod(hash(CAST(`r` AS STRING)), 2)')
    >>> analyze_call("delta_frames", 2, table, time=constant("t"), value=constant("v"),
    ...              x=constant(0.5), min_duration=constant("3 apples"))
    Traceback (most recent call last):
    ...
    ValueError: `min_duration` ...'3 apples'...
    """
    step = step_functions()[function]
    table, params = _arguments(step, args, kwargs)
    fields = {f.name: f for f in table.fields}
    roles = {attribute: name for name, (_, attribute) in step.from_input.items()}
    time_name = (_table_column(step, step.sql.time, fields) if step.sql.time
                 else _column_name(params, roles["time"], fields))
    time_unit = (load(f"windowkit.spark.{step.sql.time_unit}")(table=table, **params)
                 if step.sql.time_unit else params.get(roles.get("time_unit", "")))
    clock = EventTime(None, *time_kind(fields[time_name].dataType, time_name, time_unit))
    keys = _key_names(params.get(roles["key"]) if "key" in roles else None, roles.get("key"),
                      fields)
    # (the builder and the columns also see the table's schema: an item's type, say)
    factory = load(f"windowkit.spark.{step.sql.operator}")(**params, table=table)
    operator = factory()
    declared = dict(operator.input_schema)
    texts = _input_texts(step, params, operator, table)
    inputs = {name: declared[name] for name in texts}
    shards = check_int("shards", params["shards"] if params.get("shards") is not None
                       else shards_default, 1)
    key_text = key_text_sql(keys)
    micros = clock.micros_sql(quoted_name(time_name))
    sites = (load(f"windowkit.spark.{step.sql.sites}")(table=table, micros=micros, **params)
             if step.sql.sites else None)
    select = _projection(step, texts, table, inputs, clock, time_name, keys, key_text,
                         operator, sites)
    columns = _columns(step, operator, params, table)
    keyed = KEY in dict(operator.output_schema)
    schema = _output_schema(keys, fields, columns, clock, keyed)
    plan = Plan(factory, inputs, keys, clock, columns, keyed, sites, operator.ends_with_input)
    if sites is not None:
        # ranks need every row, in time order, rows at the same time in a fixed order
        order = ([OrderingColumn(select[1].name), OrderingColumn(row_hash_sql(table))]
                 if sites.ranked is not None else [])
        return PlannedCall(schema=schema, withSinglePartition=True, orderBy=order,
                           select=select, plan=plan)
    routed = _routed_by(operator, select, key_text if keys else None)
    if routed is None:
        return PlannedCall(schema=schema, withSinglePartition=True, select=select, plan=plan)
    return PlannedCall(schema=schema, select=select, plan=plan,
                       partitionBy=[PartitioningColumn(f"pmod(hash({routed}), {shards})")])


def _input_texts(step: StepFunction, params: dict, operator: Any, table: T.StructType
                 ) -> dict[str, str]:
    """Each operator input's SQL expression over the table: the parameter holding it (its
    default where the parameter is None; left out, as the function leaves it out, without
    one), or what the signature's function of the operator and the table gives."""
    if isinstance(step.sql.inputs, str):
        return load(f"windowkit.spark.{step.sql.inputs}")(operator, table=table, **params)
    texts = {}
    for name, parameter in step.sql.inputs.items():
        text = step.sql.defaults.get(name) if params[parameter] is None else params[parameter]
        if text is None:
            continue
        if not isinstance(text, str):
            msg = f"`{parameter}` must be a SQL expression over the table's columns; got {text!r}"
            raise ValueError(msg)
        texts[name] = text
    return texts


def _routed_by(operator: Any, select: list[SelectedColumn], key_text: str | None
               ) -> str | None:
    """The SQL text the rows are hashed into shards by, as the adapter routes them: the key,
    or the operator's ``route`` input; None: one instance takes every row (the global key,
    or an operator that ``ends_with_input``, whose instances must all end at the input's last
    time: one instance's last row is that time)."""
    if operator.ends_with_input:
        return None
    if operator.route == KEY:
        return key_text
    return next(c.name for c in select if c.alias == f"{_INPUT}{operator.route}")


def _columns(step: StepFunction, operator: Any, params: dict, table: T.StructType
             ) -> tuple[tuple[str, Any, Any], ...]:
    """The output's columns after the key, as (name, the operator's column it holds or a
    function of the operator's output computing it, its kind: that in the operator's output
    schema unless given, a kind or a Spark type), as the function projects them."""
    declared = load(f"windowkit.spark.{step.sql.columns}")
    entries = declared(operator, table=table, **params) if callable(declared) else declared
    kinds = dict(operator.output_schema)
    found = []
    for entry in entries:
        name, source, *kind = entry if isinstance(entry, tuple) else (entry, entry)
        found.append((name, source, kind[0] if kind else kinds.get(source)))
    return tuple(found)


def _arguments(step: StepFunction, args: tuple, kwargs: dict) -> tuple[T.StructType, dict]:
    """The call's table and its parameters, the function's defaults filled in; refuses an
    unknown parameter, a missing one and a value that is not a constant."""
    signature = inspect.signature(step.callable())
    table_parameter = step.roles[0][0]
    accepted = [name for name in signature.parameters if name != table_parameter]
    given = dict(zip([table_parameter, *accepted], args, strict=False))
    for name, argument in kwargs.items():
        if name not in signature.parameters:
            msg = (f"{SQL_PREFIX}{step.name} has no parameter `{name}`; it takes "
                   f"{', '.join(accepted)}")
            raise ValueError(msg)
        given[name] = argument
    table = given.pop(table_parameter, None)
    if table is None or not table.isTable:
        msg = (f"`{table_parameter}` must be a TABLE argument, e.g. "
               f"{SQL_PREFIX}{step.name}(TABLE(readings), ...)")
        raise ValueError(msg)
    params = {}
    for name in accepted:
        parameter = signature.parameters[name]
        if name in given:
            params[name] = _constant(name, given[name])
        elif parameter.default is inspect.Parameter.empty:
            msg = f"{SQL_PREFIX}{step.name} requires `{name}`"
            raise ValueError(msg)
        else:
            params[name] = parameter.default
    return table.dataType, params


def _constant(name: str, argument: AnalyzeArgument) -> Any:
    """A parameter's value as the DataFrame function takes it (a SQL decimal as a float)."""
    if argument.isTable or not argument.isConstantExpression:
        msg = (f"`{name}` must be a constant (a literal such as '3 rows' or 0.5); got "
               f"{'a TABLE' if argument.isTable else 'an expression of the rows'}")
        raise ValueError(msg)
    return _python_value(argument.value)


def _python_value(value: Any) -> Any:
    """A SQL literal's value as Python gives it to the function: decimals as floats, arrays
    (of arrays) as lists."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    return [_python_value(v) for v in value] if isinstance(value, list | tuple) else value


def _table_column(step: StepFunction, name: str, fields: dict) -> str:
    """The column ``name`` the function reads from its table, or the error naming the table
    parameter."""
    if name not in fields:
        msg = (f"`{step.roles[0][0]}` must have a `{name}` column; the table has "
               f"{', '.join(fields)}")
        raise ValueError(msg)
    return name


def _column_name(params: dict, parameter: str, fields: dict) -> str:
    name = params[parameter]
    if not isinstance(name, str) or name not in fields:
        msg = (f"`{parameter}` must name a column of the table ({', '.join(fields)}); "
               f"got {name!r}")
        raise ValueError(msg)
    return name


def _key_names(by: Any, parameter: str | None, fields: dict) -> tuple[str, ...]:
    """``by``'s column names: none, one name, or an array of names (a composite key)."""
    if by is None:
        return ()
    names = by if isinstance(by, list) else [by]
    wrong = [n for n in names if not isinstance(n, str) or n not in fields]
    if not names or wrong:
        msg = (f"`{parameter}` must name a column of the table ({', '.join(fields)}), or be "
               f"an array of such names; got {by!r}")
        raise ValueError(msg)
    if len(set(names)) < len(names):
        msg = f"`{parameter}` names a column twice: {names}"
        raise ValueError(msg)
    return tuple(names)


def _projection(step: StepFunction, texts: dict, table: T.StructType, inputs: dict,
                clock: EventTime, time_name: str, keys: tuple[str, ...],
                key_text: str, operator: Any, sites: Sites | None = None
                ) -> list[SelectedColumn]:
    """The columns Spark computes for the UDTF, as the adapter's projection: the key's text,
    the event time in µs (null for a malformed row), the operator's inputs, the row's shard
    (with ``sites``), the key's own values, and a malformed row's JSON (null for the others);
    a row the function's own check (the signature's ``valid``) refuses is malformed too."""
    micros = clock.micros_sql(quoted_name(time_name))
    malformed = [f"{micros} IS NULL", *[f"{quoted_name(k)} IS NULL" for k in keys]]
    columns = {}
    for name, kind in inputs.items():
        text = texts[name]
        if kind == "code":
            # a time too far out for the adapter to fold the code into is not a real time
            malformed.append(f"NOT {micros} BETWEEN {-FOLD_LIMIT} AND {FOLD_LIMIT}")
            columns[name] = predicate_code_sql(text, table.fields)
        else:
            spark_type = T.StringType() if kind == "category" else _SPARK_TYPES[kind]
            columns[name] = f"try_cast(({text}) AS {spark_type.simpleString()})"
    if operator.route != KEY:
        # a row with no routing value belongs to no instance's state
        malformed.append(f"({columns[operator.route]}) IS NULL")
    if step.sql.valid is not None:
        valid = load(f"windowkit.spark.{step.sql.valid}")(operator, micros, columns)
        malformed.append(f"NOT coalesce({valid}, false)")
    flagged = [f"({columns[n]}) IS NULL" for n, kind in inputs.items() if kind == "code"]
    row = ", ".join(quoted_name(f.name) for f in table.fields)
    bad = " OR ".join(malformed)
    return [SelectedColumn(key_text, _KEY_COLUMN),
            SelectedColumn(f"CASE WHEN NOT ({bad}) THEN {micros} END", _TIME_COLUMN),
            *[SelectedColumn(text, f"{_INPUT}{name}") for name, text in columns.items()],
            *([SelectedColumn(sites.shard, _SHARD_COLUMN)] if sites is not None else []),
            *[SelectedColumn(quoted_name(k), f"{_KEY_VALUE}{i}") for i, k in enumerate(keys)],
            SelectedColumn(f"CASE WHEN {' OR '.join([bad, *flagged])} "
                           f"THEN to_json(struct({row})) END", _DETAIL_COLUMN)]


def _output_schema(keys: tuple[str, ...], fields: dict,
                   columns: tuple[tuple[str, Any, Any], ...], clock: EventTime,
                   keyed: bool = True) -> T.StructType:
    """The DataFrame function's output schema: the key columns under their own names and
    types (``key``, text, for the global key; none if the operator gives no key), then
    ``columns`` (times in ``clock``'s kind)."""
    key_fields = ([] if not keyed
                  else [T.StructField(k, fields[k].dataType, True) for k in keys] if keys
                  else [T.StructField(KEY, T.StringType(), True)])
    return T.StructType([*key_fields, *[T.StructField(name, _output_type(kind, clock), True)
                                        for name, _, kind in columns]])


def _output_type(kind: Any, clock: EventTime) -> T.DataType:
    if isinstance(kind, T.DataType):
        return kind
    if isinstance(kind, tuple):  # ("array", the elements' kind)
        return T.ArrayType(_output_type(kind[1], clock), True)
    if kind is None:  # rejected, detail
        return T.StringType()
    if kind == "timestamp":
        return _TIME_TYPES[clock.kind]
    if kind == "duration":
        return T.DayTimeIntervalType()
    return _SPARK_TYPES[kind]


class _TableFunction:
    """One UDTF instance: the rows of the shards Spark hands it, buffered, then run to the end
    of the input by the adapter's run of a batch shard."""

    def __init__(self, analyze_result: PlannedCall) -> None:
        self.plan = analyze_result.plan
        # the projection's columns, in its order (see _projection): key, time, inputs, ...
        self.inputs = list(self.plan.inputs)
        self.codes = [i for i, n in enumerate(self.inputs) if self.plan.inputs[n] == "code"]
        self.width = 2 + len(self.inputs) + (self.plan.sites is not None)
        self.keys: list[str] = []
        self.times: list[int] = []
        self.values: list[list] = [[] for _ in self.inputs]
        self.shards: list[int | None] = []
        self.key_values: dict[str, tuple] = {}

    def eval(self, *args: Any, **kwargs: Any) -> list[tuple] | None:
        # Called once per row: no generator, positional reads, the common row appended only
        # (Spark's row-wise UDTF path costs some 25 µs a row before this runs at all)
        # the table's row, given first or by its name; the other arguments were analysed
        row = args[0] if args and isinstance(args[0], Row) else next(
            v for v in (*args, *kwargs.values()) if isinstance(v, Row))
        detail = row[-1]
        if detail is not None and row[1] is None:
            return self._rejected(detail, row)
        key = row[0]
        self.keys.append(key)
        self.times.append(row[1])
        for i, values in enumerate(self.values):
            values.append(row[2 + i])
        if self.plan.sites is not None:
            self.shards.append(row[self.width - 1])
        if key not in self.key_values:
            self.key_values[key] = tuple(row[self.width:-1])
        if detail is None:
            return None
        # a code that could not be computed: reported, and still a missing value (-1)
        for i in self.codes:
            if self.values[i][-1] is None:
                self.values[i][-1] = -1
        return self._rejected(detail, row)

    def terminate(self) -> Iterator[tuple]:
        if not self.times:
            return
        sites = self.plan.sites
        times = np.asarray(self.times, dtype=np.int64)
        if sites is not None and sites.ranked is not None:
            # the rows came in time order (the call's ORDER BY): their ranks are their places
            times = np.arange(len(times), dtype=np.int64) * sites.ranked
        rows = pa.table({KEY: pa.array(self.keys, pa.string()), TIME: times,
                         **{n: pa.array(values, _ARROW_INPUTS[self.plan.inputs[n]])
                            for n, values in zip(self.inputs, self.values, strict=True)}})
        if self.plan.ends_with_input:
            rows = rows.append_column(INPUT_END, pa.array(np.full(len(times), times.max())))
        categorical = tuple(n for n, kind in self.plan.inputs.items() if kind == "category")
        for shard, shard_rows in self._by_shard(rows):
            for part in run_to_end(self.plan.factory, shard_rows, None, categorical):
                if shard is not None:
                    part = part.assign(**{SHARD_OUT: shard})
                yield from self._output_rows(part)

    def _by_shard(self, rows: pa.Table) -> Iterator[tuple[int | None, pa.Table]]:
        """The rows of each shard (one operator each), in shard order; all of them under
        None without sites."""
        if self.plan.sites is None:
            yield None, rows
            return
        given = pd.array(self.shards, dtype="Int64")
        ranks = np.arange(len(given), dtype=np.int64) % self.plan.sites.shards
        shards = np.where(given.isna(), ranks, given.to_numpy(dtype=np.int64, na_value=0))
        for shard in np.unique(shards):
            yield int(shard), rows.take(np.flatnonzero(shards == shard))

    def _output_rows(self, part: Any) -> Iterator[tuple]:
        keys = ([()] * len(part) if not self.plan.keyed
                else [(k,) for k in part[KEY]] if not self.plan.keys
                else [self.key_values[k] for k in part[KEY]])
        values = [[_output_value(v, kind, self.plan.clock) for v in _values(part, source)]
                  for _, source, kind in self.plan.columns]
        for key, rest in zip(keys, zip(*values, strict=True), strict=True):
            yield (*key, *rest)

    def _rejected(self, detail: str, row: Row) -> list[tuple]:
        """A rejected row's output row; none if the output has no ``rejected`` column (a
        function over rows another one made, which dropped what it rejected)."""
        if not any(name == REJECTED for name, _, _ in self.plan.columns):
            return []
        width = max(len(self.plan.keys), 1) if self.plan.keyed else 0
        # a rejected row keeps the shard it was routed to (0 if the rows' ranks pick it)
        shard = None if self.plan.sites is None else row[self.width - 1] or 0
        return [(*[None] * width, *[detail if name == DETAIL_OUT else "malformed"
                                    if name == REJECTED else shard if source == SHARD_OUT
                                    else None for name, source, _ in self.plan.columns])]


def _values(part: pd.DataFrame, source: Any) -> Any:
    """A column's values in a part of the operator's output (nulls if it has none)."""
    if callable(source):
        return source(part)
    return part[source] if source in part else [None] * len(part)


#: The kind of an output column given as a Spark type, for its values.
_TYPE_KINDS = ((T.IntegralType, "int64"), (T.FractionalType, "float64"),
               (T.BooleanType, "bool"))


def _output_value(value: Any, kind: Any, clock: EventTime) -> Any:
    """One value of the operator's output as Spark takes it for the output's type."""
    if isinstance(kind, tuple):  # ("array", the elements' kind)
        return None if value is None else [_output_value(v, kind[1], clock) for v in value]
    if value is None or pd.isna(value):
        return None
    if isinstance(kind, T.DataType):
        kind = next((k for t, k in _TYPE_KINDS if isinstance(kind, t)), None)
    if kind == "timestamp":
        return clock.restore_value(int(value))
    if kind == "duration":
        return dt.timedelta(microseconds=int(value))
    if kind == "int64":
        return int(value)
    if kind == "float64":
        return float(value)
    if kind == "bool":
        return bool(value)
    return value


__all__ = ["SQL_PREFIX", "register_sql"]
