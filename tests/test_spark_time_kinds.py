"""Every Spark function reads every kind of time column alike, through one parser.

The same rows are given with their time as a timestamp, a ``timestamp_ntz`` (under a session
time zone with a daylight-saving change among the rows), a date, a timestamp string and
integers in s, ms, us and ns; each function must give the rows it gives for the timestamps,
its times in the input's own kind, and refuse a bad time column with one error text.

Rows lie on whole days (a date holds nothing finer), from 2024-03-08: New York moves its
clocks on 2024-03-10.
"""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

pytestmark = pytest.mark.spark

DAY0 = dt.datetime(2024, 3, 8)
#: (key, day, x, item, call)
ROWS = [("a", 0, 1.0, "p", "open"), ("a", 1, 3.0, "q", "execve"), ("a", 2, 4.0, "p", "read"),
        ("a", 3, 5.0, "p", "execve"), ("a", 5, 1.0, "q", "open"), ("a", 6, 4.0, "p", "execve"),
        ("b", 1, 3.0, "p", "open"), ("b", 2, 3.0, "q", "execve"), ("b", 4, 0.0, "p", "read")]
US_PER = {"s": 1_000_000, "ms": 1_000, "us": 1}
KINDS = ["timestamp", "timestamp_ntz", "date", "string", "s", "ms", "us", "ns"]
LEVELS = [("2 days", "1 day"), ("4 days", "2 days")]


def _micros(day: int) -> int:
    return (DAY0 - dt.datetime(1970, 1, 1) + dt.timedelta(days=day)) // dt.timedelta(
        microseconds=1)


def _time_value(kind: str, day: int):
    wall = DAY0 + dt.timedelta(days=day)
    if kind == "timestamp":
        return wall.replace(tzinfo=dt.UTC)
    if kind == "timestamp_ntz":
        return wall
    if kind == "date":
        return wall.date()
    if kind == "string":
        return wall.strftime("%Y-%m-%dT%H:%M:%SZ")
    return _micros(day) * 1000 if kind == "ns" else _micros(day) // US_PER[kind]


def _unit(kind: str) -> str | None:
    return kind if kind in ("s", "ms", "us", "ns") else None


def readings(spark, kind: str):
    spark_type = {"timestamp": "timestamp", "timestamp_ntz": "timestamp_ntz", "date": "date",
                  "string": "string"}.get(kind, "bigint")
    return spark.createDataFrame(
        [(k, _time_value(kind, d), x, i, c) for k, d, x, i, c in ROWS],
        f"k string, t {spark_type}, x double, item string, call string")


def _threshold(df, unit):
    from windowkit.spark import threshold_frames

    return threshold_frames(df, "t", "x > 2", by="k", time_unit=unit)


def _custom(df, unit):
    from windowkit.core.frames import IncreasingTrend
    from windowkit.spark import custom_frames

    return custom_frames(df, "t", "x", IncreasingTrend(), by="k", min_duration="2 rows",
                         time_unit=unit)


def _fill(df, unit):
    from windowkit.spark import fill_frames

    return fill_frames(_threshold(df, unit), df, "t", by="k", before="1 day", time_unit=unit)


def _call(name: str, **kwargs):
    def run(df, unit):
        import windowkit.spark as wk

        return getattr(wk, name)(df, **kwargs, time_unit=unit)

    return run


FUNCTIONS = {
    "threshold_frames": _threshold,
    "boundary_frames": _call("boundary_frames", time="t", value="x", x=3.0, by="k"),
    "delta_frames": _call("delta_frames", time="t", value="x", x=2.0, by="k"),
    "aggregate_frames": _call("aggregate_frames", time="t", value="x", func="sum", op=">",
                              x=5.0, by="k"),
    "custom_frames": _custom,
    "fill_frames": _fill,
    "multi_granular": _call("multi_granular", time="t", levels=LEVELS, by="k", value="x",
                            aggregates=["count", "sum"]),
    "recurring_items": _call("recurring_items", time="t", item="item", levels=LEVELS, by="k"),
    "widen_detect": _call("widen_detect", time="t", by="k", detector="execve", base="1 day",
                          levels=2, report="all"),
    "persistent_items": _call("persistent_items", item="item", time="t", slot="1 day",
                              window_slots=2, alpha=1.0, epsilon=0.5),
    "exact_persistent_items": _call("exact_persistent_items", item="item", time="t",
                                    slot="1 day", window_slots=2, alpha=0.5),
    "windowed_count_min": _call("windowed_count_min", item="item", time="t", window=3,
                                unit="ticks", tick="1 day", shards=1),
}


@pytest.fixture
def new_york(spark):
    """A session time zone with a daylight-saving change among the rows, restored after."""
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    yield
    spark.conf.set("spark.sql.session.timeZone", zone)


def _time_fields(schema: T.StructType) -> set[str]:
    """The columns that hold times in the result of timestamp input."""
    return {f.name for f in schema.fields if isinstance(f.dataType, T.TimestampType)
            or (isinstance(f.dataType, T.ArrayType)
                and isinstance(f.dataType.elementType, T.TimestampType))}


def _collected(out) -> tuple[list[str], list[tuple]]:
    """The result's column names and rows, instants as µs (Python would show them in its own
    time zone); ``detail`` left out: it is the input's text."""
    def spark_side(name: str, dtype: T.DataType):
        if isinstance(dtype, T.TimestampType):
            return F.unix_micros(name).alias(name)
        if isinstance(dtype, T.ArrayType) and isinstance(dtype.elementType, T.TimestampType):
            return F.transform(name, F.unix_micros).alias(name)
        return F.col(name)

    fields = [f for f in out.schema.fields if f.name != "detail"]
    rows = out.select(*[spark_side(f.name, f.dataType) for f in fields]).collect()
    return [f.name for f in fields], [tuple(r) for r in rows]


def _normalized(names: list[str], rows: list[tuple], times: set[str], kind: str,
                unit: str) -> list[tuple]:
    """The rows of input of ``kind`` with every time as µs since 1970, rounded up to ``unit``
    (an integer time's unit: a bound at ``t + 1 µs`` comes back as ``t + 1`` unit), sorted."""
    step = US_PER.get(unit, 1)

    def as_micros(value):
        if value is None:
            return None
        if isinstance(value, list):
            return [as_micros(v) for v in value]
        if isinstance(value, str):  # the filler's own column, as it was given
            value = dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
        elif isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            value = dt.datetime.combine(value, dt.time())
        if isinstance(value, dt.datetime):  # timestamp_ntz: its wall-clock fields
            value = (value - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
        elif kind == "ns":
            assert value % 1000 == 0
            value //= 1000
        elif kind in US_PER:
            value *= US_PER[kind]
        return -(-value // step) * step

    return sorted((tuple(as_micros(v) if n in times else v for n, v in zip(names, row,
                                                                         strict=True))
                   for row in rows), key=repr)


_EXPECTED: dict[str, tuple[set[str], list[str], list[tuple]]] = {}


def _expected(spark, name: str) -> tuple[set[str], list[str], list[tuple]]:
    """The function's result for timestamp input (computed once per function)."""
    if name not in _EXPECTED:
        out = FUNCTIONS[name](readings(spark, "timestamp"), None)
        _EXPECTED[name] = (_time_fields(out.schema), *_collected(out))
    return _EXPECTED[name]


def _expected_type(kind: str) -> type[T.DataType]:
    if kind in ("timestamp", "string"):
        return T.TimestampType
    return T.TimestampNTZType if kind in ("timestamp_ntz", "date") else T.LongType


@pytest.mark.parametrize("kind", KINDS[1:])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_function_gives_the_timestamp_rows_for_every_kind_of_time(spark, request, name,
                                                                       kind):
    times, names, rows = _expected(spark, name)
    assert times and rows  # the rows give each function something to report
    if kind == "timestamp_ntz":
        request.getfixturevalue("new_york")
    df = readings(spark, kind)
    out = FUNCTIONS[name](df, _unit(kind))
    for field in out.schema.fields:
        if field.name == "t":  # fill_frames' filler rows keep their own column
            assert field.dataType == df.schema["t"].dataType
        elif field.name in times:
            dtype = field.dataType
            dtype = dtype.elementType if isinstance(dtype, T.ArrayType) else dtype
            assert isinstance(dtype, _expected_type(kind)), (field.name, dtype)
    got_names, got = _collected(out)
    assert got_names == names
    assert (_normalized(names, got, times, kind, kind)
            == _normalized(names, rows, times, "timestamp", kind))


BAD = {
    "integer without a unit": ("bigint", None, r"^`time_unit` is required for the integer time "
                               r"column 't': say whether it counts 's', 'ms', 'us' or 'ns'"),
    "a unit on a timestamp": ("timestamp", "s", r"^`time_unit` applies to integer time columns "
                              r"only; 't' is timestamp$"),
    "a double": ("double", None, r"^`time` must be a timestamp, timestamp_ntz, date, timestamp "
                 r"string or integer column; 't' is double$"),
    "an unknown unit": ("bigint", "h", r"^`time_unit` must be one of s, ms, us, ns; got 'h'$"),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_function_refuses_a_bad_time_column_with_one_text(spark, name, case):
    spark_type, unit, message = BAD[case]
    df = spark.createDataFrame([("a", None, 1.0, "p", "execve")],
                               f"k string, t {spark_type}, x double, item string, call string")
    if name == "fill_frames":
        from windowkit.spark import fill_frames

        frames = spark.createDataFrame([("a", 0, 1, 2, 1, "final")], "k string, frame_id long, "
                                       "start long, end long, last long, status string")
        with pytest.raises(ValueError, match=message):
            fill_frames(frames, df, "t", by="k", time_unit=unit)
        return
    with pytest.raises(ValueError, match=message):
        FUNCTIONS[name](df, unit)


def test_integer_times_convert_to_microseconds_exactly(spark):
    # Nanoseconds since 1970 lie beyond 2**53, where a double holds no integer exactly: each
    # value's µs is its floor division (through a double, one value in eight of these came out
    # 1 µs late). Microseconds beyond 2**53 go back to ms or s rounded up, exactly too.
    from windowkit.spark.event_time import event_time

    base = 1_700_000_000_123_456_000
    ns = [base + d for d in range(-1001, 1002)] + [-base - 1, -base, -1, 0, 1, 2**63 - 1,
                                                   -(2**63)]
    df = spark.createDataFrame([(v,) for v in ns], "t long")
    clock = event_time(df, "t", "ns")
    got = df.select("t", clock.micros().alias("m"), F.expr(clock.micros_sql("t")).alias("s"))
    assert [(r.m, r.s) for r in got.collect()] == [(v // 1000, v // 1000) for v in ns]
    micros = [2**53 + 1, 253_402_300_799_996_001, -253_402_300_799_996_001, 2**62 + 999_999,
              -(2**62) - 1, 2**63 - 1, -(2**63)]
    as_rows = spark.createDataFrame([(m,) for m in micros], "m long")
    for unit, per in (("ms", 1000), ("s", 1_000_000)):
        restored = as_rows.select(event_time(df, "t", unit).restore(F.col("m"))).collect()
        assert [r[0] for r in restored] == [-(-m // per) for m in micros]


def test_a_frame_of_nanosecond_times_starts_in_its_first_rows_microsecond(spark):
    # The first reading lies 999 ns into a µs: the frame starts in that µs (as ns), never the
    # next one, whatever a double makes of the value.
    from windowkit.spark import threshold_frames

    first = 1_700_000_000_123_456_999
    df = spark.createDataFrame([("a", first, 3.0), ("a", first + 10**9, 0.0)],
                               "k string, t long, x double")
    rows = threshold_frames(df, "t", "x > 2", by="k", time_unit="ns").collect()
    assert [(r.start, r.last) for r in rows] == [(first // 1000 * 1000, first // 1000 * 1000)]
