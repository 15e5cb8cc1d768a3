"""windowkit's SQL table functions (issue #37): each gives its DataFrame function's rows and
schema on the same input, refuses a mistake at analysis with the DataFrame function's error,
and refuses a streaming TABLE; on a Spark Connect session as on a classic one."""

from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pytest

from tests.session_kinds import (
    SQL_CALLS,
    SQL_PERSISTENT_CALLS,
    SQL_REPORT_CALLS,
    SQL_WIDENING_CALL,
    readings,
    sql_call,
    sql_calls,
    sql_flows,
)

pytestmark = pytest.mark.spark

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def registered(spark):
    from windowkit.spark import register_sql

    names = register_sql(spark)
    readings(spark).createOrReplaceTempView("readings")
    return names


def analyse(spark, query: str):
    """Spark's analysis of ``query`` (its schema), running nothing."""
    return spark.sql(query).schema


def canonical(rows: pd.DataFrame) -> pd.DataFrame:
    rows = rows.reset_index(drop=True)
    order = rows.astype(str).sort_values(list(rows.columns), kind="stable").index
    return rows.loc[order].reset_index(drop=True)


def same_rows(sql, frames) -> None:
    """The SQL call's schema and rows are the DataFrame function's."""
    assert sql.schema == frames.schema
    expected = frames.toPandas()
    assert len(expected) > 0
    pd.testing.assert_frame_equal(canonical(sql.toPandas()), canonical(expected))


def test_register_sql_registers_the_functions_that_sql_can_call_issue37(registered):
    assert sorted(registered) == ["windowkit_aggregate_frames", "windowkit_boundary_frames",
                                  "windowkit_delta_frames",
                                  "windowkit_exact_persistent_items", "windowkit_heavy_hitters",
                                  "windowkit_multi_granular",
                                  "windowkit_persistent_items", "windowkit_recurring_items",
                                  "windowkit_threshold_frames", "windowkit_widen_detect",
                                  "windowkit_windowed_count_min"]


@pytest.mark.parametrize("function", sorted(SQL_CALLS))
def test_each_sql_function_gives_the_dataframe_functions_rows_issue37(spark, registered,
                                                                        function):
    import windowkit.spark as W

    arguments, params = SQL_CALLS[function]
    frames = getattr(W, function)(readings(spark), "time", by="router", **params)
    same_rows(spark.sql(sql_call(function, arguments)), frames)


def test_malformed_rows_come_out_as_the_dataframe_function_gives_them_issue37(spark,
                                                                             registered):
    from pyspark.sql import functions as F

    out = spark.sql(sql_call("delta_frames", "value => 'loss_rate', x => 0.003"))
    rejected = out.filter(F.col("rejected").isNotNull()).select("rejected", "detail")
    # readings() has a row of no time and one of no router
    assert sorted(r.detail for r in rejected.collect()) == sorted(
        readings(spark).filter("time IS NULL OR router IS NULL").select(
            F.to_json(F.struct("router", "time", "loss_rate"))).toPandas().iloc[:, 0])
    assert {r.rejected for r in rejected.collect()} == {"malformed"}


def test_a_typed_composite_key_and_integer_times_come_back_in_their_own_types_issue37(spark,
                                                                                        registered):
    from windowkit.spark import threshold_frames

    rows = [(f"s{i % 2}", i % 3, 10 * i, float(i % 5)) for i in range(60)]
    rows += [("s1", None, 5, 1.0), ("s0", 1, None, 2.0)]
    df = spark.createDataFrame(rows, "site string, router int, t long, v double")
    df.createOrReplaceTempView("sites")
    sql = spark.sql("""SELECT * FROM windowkit_threshold_frames(TABLE(sites), time => 't',
                       time_unit => 's', when => 'v > 1', by => array('site', 'router'),
                       fragment_every => '2 rows')""")
    frames = threshold_frames(df, "t", "v > 1", by=["site", "router"], time_unit="s",
                              fragment_every="2 rows")
    same_rows(sql, frames)


def test_the_global_key_and_wall_clock_times_issue37(spark, registered):
    from windowkit.spark import boundary_frames

    df = spark.sql("SELECT 'r1' AS router, CAST(timestamp_ntz'2024-03-31 01:00:00' + "
                   "make_interval(0, 0, 0, 0, 0, id) AS TIMESTAMP_NTZ) AS time, "
                   "CAST(id * 0.7 AS DOUBLE) AS v FROM range(200)")
    df.createOrReplaceTempView("clock")
    sql = spark.sql("SELECT * FROM windowkit_boundary_frames(TABLE(clock), time => 'time', "
                    "value => 'v', x => 10)")
    same_rows(sql, boundary_frames(df, "time", "v", 10))


@pytest.mark.parametrize("function", sorted(SQL_REPORT_CALLS))
def test_the_multi_granular_functions_give_the_dataframe_functions_rows_issue37(
        spark, registered, function):
    """A typed key column, a value that is text (one row not a number), a distinct count,
    levels as an array of arrays, and malformed rows."""
    import windowkit.spark as W

    query, params = SQL_REPORT_CALLS[function]
    df = sql_flows(spark)
    same_rows(spark.sql(query), getattr(W, function)(df, **params))


def test_multi_granular_over_integer_times_and_the_global_key_counts_alone_issue37(
        spark, registered):
    """No ``value`` (count alone, its default), ``closed => 'right'`` (rows before the origin
    are malformed), continuous reports, integer times in ms, the global key."""
    from windowkit.spark import multi_granular, recurring_items

    rows = [(int(t), f"i{t % 3}") for t in range(-4000, 60_000, 1700)] + [(None, "i1")]
    df = spark.createDataFrame(rows, "ms long, item string")
    df.createOrReplaceTempView("ticks")
    params = {"levels": [("2 seconds", "2 seconds"), ("12 seconds", "4 seconds")],
              "closed": "right", "report": "continuous", "time_unit": "ms"}
    sql = spark.sql("""SELECT * FROM windowkit_multi_granular(TABLE(ticks), time => 'ms',
        levels => array(array('2 seconds', '2 seconds'), array('12 seconds', '4 seconds')),
        closed => 'right', report => 'continuous', time_unit => 'ms',
        aggregates => array('count'))""")
    same_rows(sql, multi_granular(df, "ms", aggregates=["count"], **params))
    sql = spark.sql("""SELECT * FROM windowkit_recurring_items(TABLE(ticks), time => 'ms',
        item => 'item', time_unit => 'ms', report => 'continuous', closed => 'right',
        levels => array(array('2 seconds', '2 seconds'), array('12 seconds', '4 seconds')))""")
    same_rows(sql, recurring_items(df, "ms", "item", **params))


@pytest.mark.parametrize("call", sorted(SQL_PERSISTENT_CALLS))
def test_persistent_items_gives_the_dataframe_functions_rows_issue37(spark, registered, call):
    """A typed item (sliding windows: one instance) and a text one (fixed windows: routed by
    the item into shards), over rows with no time and rows with no item; the sketch, and the
    exact count (an operator in SQL, plain Spark SQL in the DataFrame function)."""
    import windowkit.spark as W

    query, params = SQL_PERSISTENT_CALLS[call]
    df = sql_flows(spark)
    same_rows(spark.sql(query), getattr(W, call.rsplit("_", 1)[0])(df, **params))


def test_exact_persistent_items_over_integer_times_an_origin_and_alpha_one_issue37(
        spark, registered):
    from windowkit.spark import exact_persistent_items

    rows = [(i % 5 if i % 7 else 1, 1_000 * i + 250) for i in range(150)]
    df = spark.createDataFrame(rows + [(2, None), (None, 3)], "ip long, ms long")
    df.createOrReplaceTempView("seen_ids")
    for alpha, sliding in [(0.6, True), (1.0, True), (0.6, False)]:
        sql = spark.sql(f"""SELECT * FROM windowkit_exact_persistent_items(TABLE(seen_ids),
            item => 'ip', time => 'ms', time_unit => 'ms', slot => '5 seconds',
            window_slots => 6, alpha => {alpha}, sliding => {sliding},
            origin => '1970-01-01 00:00:02')""")
        same_rows(sql, exact_persistent_items(df, "ip", "ms", time_unit="ms",
                                              slot="5 seconds", window_slots=6, alpha=alpha,
                                              sliding=sliding, origin="1970-01-01 00:00:02"))


def test_persistent_items_over_integer_times_and_an_origin_issue37(spark, registered):
    from windowkit.spark import persistent_items

    rows = [(f"ip{i % 5}" if i % 7 else "ip1", 1_000 * i + 250) for i in range(150)]
    df = spark.createDataFrame(rows + [("ip2", None)], "ip string, ms long")
    df.createOrReplaceTempView("seen")
    sql = spark.sql("""SELECT * FROM windowkit_persistent_items(TABLE(seen), item => 'ip',
        time => 'ms', time_unit => 'ms', slot => '5 seconds', window_slots => 6,
        alpha => 0.6, epsilon => 0.3, origin => '1970-01-01 00:00:02')""")
    same_rows(sql, persistent_items(df, "ip", "ms", time_unit="ms", slot="5 seconds",
                                    window_slots=6, alpha=0.6, epsilon=0.3,
                                    origin="1970-01-01 00:00:02"))


def test_widen_detect_gives_the_dataframe_functions_rows_issue37(spark, registered):
    """Episodes over system calls (a text column the table lacks is null), their times and
    ordinals as arrays, malformed rows; and with a process id as text, an array key."""
    from windowkit.spark import widen_detect

    query, params = SQL_WIDENING_CALL
    df = sql_calls(spark)
    same_rows(spark.sql(query), widen_detect(df, **params))
    texts = df.selectExpr("CAST(pid AS STRING) AS proc", "pid", "time", "call", "fd", "ret")
    texts.drop("pid").createOrReplaceTempView("text_calls")
    sql = spark.sql("""SELECT * FROM windowkit_widen_detect(TABLE(text_calls),
        time => 'time', by => array('proc'), base => '2 seconds', max_length => 8,
        levels => 4, detector => 'remote-shell', report => 'all')""")
    same_rows(sql, widen_detect(texts.drop("pid"), "time", by=["proc"], base="2 seconds",
                                max_length=8, levels=4, report="all"))


@pytest.mark.parametrize(("call", "message"), [
    ("windowkit_widen_detect(TABLE(calls), time => 'time', levels => 3, "
     "detector => 'no-such-episode')",
     "no-such-episode"),
    ("windowkit_widen_detect(TABLE(calls), time => 'time', levels => 3, "
     "base => '4 apples')",
     "'4 apples'"),
    ("windowkit_persistent_items(TABLE(flows), item => 'dst', time => 'time', "
     "alpha => 0.5, epsilon => 0.7)",
     "`epsilon` must be smaller than `alpha`; got epsilon=0.7, alpha=0.5"),
    ("windowkit_persistent_items(TABLE(flows), item => 'upper(dst)', time => 'time')",
     "`item` must name a column of the table (src, dst, time, bytes, bucket, seq); "
     "got 'upper(dst)'"),
    ("windowkit_persistent_items(TABLE(flows), item => 'dst', time => 'time', "
     "slot => '20 apples')", "'20 apples'"),
    ("windowkit_exact_persistent_items(TABLE(flows), item => 'dst', time => 'time', "
     "alpha => 1.5)", "`alpha` must be in (0, 1]; got 1.5"),
    ("windowkit_exact_persistent_items(TABLE(flows), item => 'dst', time => 'time', "
     "epsilon => 0.1)",
     "windowkit_exact_persistent_items has no parameter `epsilon`; it takes item, time, slot"),
    ("windowkit_multi_granular(TABLE(flows), time => 'time', value => 'bytes', "
     "window => 'RANGES 1 MINUTE SLIDES 1 MINUTE', agregates => array('sum'))",
     "windowkit_multi_granular has no parameter `agregates`; it takes time, window, levels"),
    ("windowkit_multi_granular(TABLE(flows), time => 'time', value => 'bytes', "
     "window => 'RANGES 1 MINUTE SLIDES 1 MINUTE', aggregates => array('median'))",
     "`aggregates` must be one of"),
    ("windowkit_multi_granular(TABLE(flows), time => 'time', "
     "window => 'RANGES 1 MINUTE SLIDES 1 MINUTE')",
     "`value` is required for aggregates other than count and for regression"),
    ("windowkit_recurring_items(TABLE(flows), time => 'time', item => 'dst', "
     "window => 'RANGES 1 MINUTE SLIDES 1 MINUTE', report => 'sometimes')",
     "`report` must be one of"),
    ("windowkit_recurring_items(TABLE(flows), time => 'time', item => 'dst', "
     "window => 'RANGES 1 MINUT SLIDES 1 MINUTE')", "1 MINUT"),
], ids=["detector", "base", "epsilon", "item", "slot", "exact-alpha", "exact-unknown",
        "unknown", "aggregate", "value", "report", "window"])
def test_a_reports_mistake_is_one_error_at_analysis_issue37(spark, registered, call,
                                                                  message):
    from pyspark.errors import AnalysisException

    sql_flows(spark)
    sql_calls(spark)
    with pytest.raises(AnalysisException) as raised:
        analyse(spark, f"SELECT * FROM {call}")
    error = str(raised.value)
    last = [line for line in error.splitlines() if line.startswith("ValueError: ")]
    assert len(last) == 1 and message in last[0], error
    assert ("'median'" in last[0]) == ("median" in call)
    assert ("'sometimes'" in last[0]) == ("sometimes" in call)


def test_the_sql_projection_reads_times_and_predicates_as_the_dataframe_function_issue37(spark):
    """The SQL text twins of the adapter's column expressions give the same values."""
    from pyspark.sql import functions as F

    from windowkit.spark.event_time import event_time
    from windowkit.spark.frames import _CODE, _with_predicate_code, predicate_code_sql

    df = spark.createDataFrame(
        [(1, "2024-01-01 00:00:01", 0.5, "1.5"), (-7, "n/a", float("nan"), "n/a"),
         (2**62, None, float("inf"), None), (None, "2024-03-31 02:30:00", None, "NaN")],
        "i long, s string, x double, y string")
    df = df.withColumn("ts", F.try_to_timestamp("s"))
    df = df.withColumn("ntz", F.col("ts").cast("timestamp_ntz"))
    for time, unit in [("i", "s"), ("i", "ms"), ("i", "us"), ("i", "ns"), ("s", None),
                       ("ntz", None), ("ts", None)]:
        clock = event_time(df, time, unit)
        got = df.select(clock.micros().alias("a"), F.expr(clock.micros_sql(time)).alias("b"))
        assert [r.a for r in got.collect()] == [r.b for r in got.collect()], (time, unit)
    spark.conf.set("spark.sql.ansi.enabled", "false")  # the DataFrame function's casts
    try:
        for when in ["x > 0.4", "y > 1 OR x < 0", "i > 0"]:
            coded = _with_predicate_code(df, when)
            got = coded.select(F.col(_CODE).alias("a"),
                               F.expr(predicate_code_sql(when, df.schema.fields)).alias("b"))
            assert [r.a for r in got.collect()] == [r.b for r in got.collect()], when
    finally:
        spark.conf.set("spark.sql.ansi.enabled", "true")


@pytest.mark.parametrize(("call", "message"), [
    ("when => 'loss_rate > 0.003', min_duration => '3 apples'",
     "`min_duration` must be a positive duration like '3 rows' or '90 seconds'"),
    ("when => 'loss_rate > 0.003', windw => '1 minute'",
     "windowkit_threshold_frames has no parameter `windw`; it takes time, when, by"),
    ("min_duration => '3 rows'", "windowkit_threshold_frames requires `when`"),
    ("when => 'loss_rate > 0.003', missing => 'sometimes'", "`missing`"),
    ("when => 'loss_rate > 0.003', shards => 0", "`shards` must be an integer in [1, "),
], ids=["duration", "unknown", "required", "choice", "shards"])
def test_a_mistake_is_one_error_at_analysis_naming_the_parameter_issue37(spark, registered,
                                                                        call, message):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException) as raised:
        analyse(spark, sql_call("threshold_frames", call))
    # Spark's class and a short traceback, then the DataFrame function's one-line error
    error = str(raised.value)
    assert "TABLE_VALUED_FUNCTION_FAILED_TO_ANALYZE_IN_PYTHON" in error
    last = [line for line in error.splitlines() if line.startswith("ValueError: ")]
    assert len(last) == 1 and message in last[0], error
    assert ("'3 apples'" in last[0]) == ("apples" in call)
    assert ("'sometimes'" in last[0]) == ("sometimes" in call)


@pytest.mark.parametrize(("call", "message"), [
    ("time => 'loss_rate'", "`time` must be a timestamp, timestamp_ntz, date, timestamp "
                            "string or integer column; 'loss_rate' is double"),
    ("time => 'tim'", "`time` must name a column of the table (router, time, loss_rate); "
                      "got 'tim'"),
    ("time => 'time', by => 'routr'", "`by` must name a column of the table"),
    ("time => 'time', min_duration => uuid()", "`min_duration` must be a constant"),
], ids=["time-type", "time-name", "by-name", "not-constant"])
def test_a_wrong_column_is_one_error_at_analysis_issue37(spark, registered, call, message):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException) as raised:
        analyse(spark, f"SELECT * FROM windowkit_delta_frames(TABLE(readings), {call}, "
                "value => 'loss_rate', x => 0.1)")
    assert message in str(raised.value)


def test_a_partition_by_of_the_callers_own_is_refused_at_analysis_issue37(spark, registered):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException,
                       match="TABLE_VALUED_FUNCTION_REQUIRED_METADATA_INCOMPATIBLE_WITH_CALL"):
        analyse(spark, "SELECT * FROM windowkit_delta_frames(TABLE(readings) PARTITION BY "
                "router, time => 'time', by => 'router', value => 'loss_rate', x => 0.1)")


def test_the_readmes_fill_join_in_sql_gives_fill_frames_rows_issue37(spark):
    """fill_frames has no table function; the README's SQL join stands for it: its frames,
    counts and means are fill_frames' over the same tables (so the recipe can fail)."""
    import re

    from pyspark.sql import functions as F

    from windowkit.spark import fill_frames

    readme = open(os.path.join(ROOT, "README.md")).read()
    block = next(code for code in re.findall(r"^```python\n(.*?)^```", readme,
                                              flags=re.S | re.M)
                 if "LEFT JOIN queues" in code)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    sql = namespace["filled"].toPandas()
    frames = spark.table("loss_frames")
    assert len(frames.collect()) > 0
    want = fill_frames(frames, spark.table("queues"), "time", by="router",
                       before="30 seconds",
                       aggregates={"n": F.count("queue"), "mean_queue": F.avg("queue")})
    columns = ["router", "frame_id", "start", "end", "n", "mean_queue"]
    expected = want.filter("rejected IS NULL").select(*columns).toPandas()
    assert expected["n"].sum() > 0
    pd.testing.assert_frame_equal(canonical(sql[columns]), canonical(expected),
                                  check_dtype=False)

def test_spark_refuses_a_streaming_table_when_the_query_starts_issue37(spark, registered,
                                                                       tmp_path):
    """Spark sorts a table function's partitions, which it refuses on a stream: the README
    sends streams to the DataFrame functions (should Spark ever accept this, the query would
    frame each micro-batch on its own and this test says so)."""
    from pyspark.errors import AnalysisException

    from tests.session_kinds import stream_of

    stream_of(spark, readings(spark, n=30), str(tmp_path / "in"), parts=1
              ).createOrReplaceTempView("stream_readings")
    out = spark.sql("SELECT * FROM windowkit_delta_frames(TABLE(stream_readings), "
                    "time => 'time', by => 'router', value => 'loss_rate', x => 0.1)")
    with pytest.raises(AnalysisException, match="not supported on streaming"):
        out.writeStream.format("memory").queryName("sql_stream").start().stop()


def test_spark_connect_gives_the_classic_rows_and_errors_issue37(spark, connect_url, tmp_path):
    from tests.session_kinds import run_case
    from tests.test_session_kinds import canonical as session_canonical

    names = ["sql_frames_batch", "sql_reports_batch", "error_sql_bad_duration"]
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "session_kinds.py"),
                           connect_url, str(tmp_path), *names],
                          env={**os.environ, "PYTHONPATH": ROOT}, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for name in names:
        classic = run_case(name, spark, str(tmp_path / f"{name}.classic"))
        assert ("error" in classic.columns) == name.startswith("error_"), classic.head()
        classic.to_parquet(tmp_path / "classic.parquet")
        pd.testing.assert_frame_equal(
            session_canonical(pd.read_parquet(tmp_path / "classic.parquet")),
            session_canonical(pd.read_parquet(tmp_path / f"{name}.parquet")))
