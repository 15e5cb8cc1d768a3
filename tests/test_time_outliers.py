"""Far-future rows: ``check_time_outliers`` and the warning of the commands concerned."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from windowkit.cli import main

pytestmark = pytest.mark.spark

DAY_S = 86_400
START_S = 1_767_225_600  # 2026-01-01
YEAR_9999_S = 253_402_214_400  # 9999-12-31


def days(spark, n: int = 3000, span: int = 20):
    """``n`` rows spread over ``span`` days from 2026-01-01: ``s`` (seconds), ``ip``."""
    from pyspark.sql import functions as F

    return spark.range(n).select(
        (F.lit(START_S) + F.col("id") % span * DAY_S + F.col("id") % 977).alias("s"),
        F.concat(F.lit("10.0.0."), (F.col("id") % 5).cast("string")).alias("ip"))


def with_rows(spark, df, seconds: list[int]):
    extra = spark.createDataFrame([(s, "10.9.9.9") for s in seconds], "s long, ip string")
    return df.unionByName(extra)


def test_a_row_dated_9999_12_31_is_reported_with_the_rows_of_its_window(spark):
    from windowkit.spark import check_time_outliers

    df = with_rows(spark, days(spark), [YEAR_9999_S - DAY_S, YEAR_9999_S])
    found = check_time_outliers(df, "s", "7 days", time_unit="s", slot="1 day")
    assert found is not None
    assert (found.in_window, found.rows) == (2, 3002)
    assert found.newest == YEAR_9999_S * 1_000_000
    assert found.percentile < (START_S + 20 * DAY_S) * 1_000_000
    message = found.message()
    assert "\n" not in message and "holds 2 of them" in message and "`s`" in message


def test_a_normal_batch_is_not_reported(spark):
    from windowkit.spark import check_time_outliers

    assert check_time_outliers(days(spark), "s", "7 days", time_unit="s") is None


def test_the_tolerance_decides_how_far_is_too_far(spark):
    from windowkit.spark import check_time_outliers

    # one row three days after the others: beyond a one-day window's default tolerance
    df = with_rows(spark, days(spark), [START_S + 23 * DAY_S])
    found = check_time_outliers(df, "s", "1 day", time_unit="s")
    assert found is not None and found.in_window == 1
    assert check_time_outliers(df, "s", "1 day", time_unit="s", tolerance="5 days") is None
    assert check_time_outliers(df, "s", "1 day", time_unit="s", quantile=0.5) is not None


KINDS = {
    "timestamp": ("timestamp_seconds(s)", None),
    "timestamp_ntz": ("CAST(timestamp_seconds(s) AS timestamp_ntz)", None),
    "date": ("date_from_unix_date(CAST(s DIV 86400 AS int))", None),
    "string": ("date_format(timestamp_seconds(s), 'yyyy-MM-dd HH:mm:ss')", None),
    "s": ("s", "s"), "ms": ("s * 1000", "ms"), "us": ("s * 1000000", "us"),
    "ns": ("s * 1000000000", "ns"),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_time_kind_is_read_as_the_functions_read_it(spark, kind):
    from pyspark.sql import functions as F

    from windowkit.spark import check_time_outliers

    expression, unit = KINDS[kind]
    far = int(dt.datetime(2200, 1, 3, tzinfo=dt.UTC).timestamp())  # within ns of int64
    df = with_rows(spark, days(spark), [far - 2 * DAY_S, far]).select(
        F.expr(expression).alias("t"))
    found = check_time_outliers(df, "t", "7 days", time_unit=unit, slot="1 day")
    assert found is not None and (found.in_window, found.rows) == (2, 3002)


def test_bad_parameters_name_themselves(spark):
    from windowkit.spark import check_time_outliers

    df = days(spark, 10)
    with pytest.raises(ValueError, match="`quantile` must be in"):
        check_time_outliers(df, "s", "1 day", time_unit="s", quantile=1.5)
    with pytest.raises(ValueError, match="`window` must be a whole number of slots"):
        check_time_outliers(df, "s", "36 hours", time_unit="s", slot="1 day")
    with pytest.raises(ValueError, match="`tolerance` must be a positive duration"):
        check_time_outliers(df, "s", "1 day", time_unit="s", tolerance=-1)
    with pytest.raises(ValueError, match="`time_unit` is required"):
        check_time_outliers(df, "s", "1 day")


def test_the_calls_whose_result_ends_at_the_newest_row():
    from windowkit.spark.time_outliers import outlier_check_of

    ticks = outlier_check_of("windowed_count_min", {"item": "ip", "time": "ts", "window": 7,
                                                    "unit": "ticks", "tick": "1 day"})
    assert (ticks["window"], ticks["slot"]) == (7 * DAY_S * 10**6, DAY_S * 10**6)
    sliding = outlier_check_of("persistent_items", {"item": "ip", "time": "ts",
                                                    "slot": "1 minute", "window_slots": 10})
    assert (sliding["window"], sliding["slot"]) == (600 * 10**6, 60 * 10**6)
    assert outlier_check_of("persistent_items", {"item": "ip", "time": "ts",
                                                 "sliding": False}) is None
    assert outlier_check_of("windowed_count_min", {"item": "ip", "window": 7}) is None
    assert outlier_check_of("multi_granular", {"time": "ts", "window": "RANGES 1 HOUR "
                                               "SLIDES 1 MINUTE"}) is None


@pytest.fixture
def far_input(tmp_path):
    utc = dt.UTC
    normal = [dt.datetime(2026, 3, 1, tzinfo=utc) + dt.timedelta(minutes=17 * i)
              for i in range(3000)]
    times = [*normal, dt.datetime(9999, 12, 31, tzinfo=utc)]
    table = pa.table({"ip": [f"10.0.0.{i % 7}" for i in range(len(times))],
                      "ts": pa.array(times, pa.timestamp("us", tz="UTC"))})
    pq.write_table(table, tmp_path / "in.parquet")
    return str(tmp_path / "in.parquet")


@pytest.fixture
def restore_session(spark):
    # the CLI's session builder reconfigures the shared session: restore it afterwards
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    yield spark
    spark.conf.set("spark.sql.shuffle.partitions", partitions)


def test_countmin_ticks_prints_one_warning_line_unless_quiet(restore_session, far_input,
                                                              tmp_path, capsys):
    argv = ["countmin", "--input", far_input, "--item", "ip", "--time", "ts", "--unit",
            "ticks", "--tick", "1 day", "--window", "7", "--algorithm", "simple"]
    assert main([*argv, "--output", str(tmp_path / "a")]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings) == 1
    assert warnings[0].startswith("windowkit: warning: the newest time of `ts` (9999-12-31")
    assert "holds 1 of them" in warnings[0] and "3,001 rows" in warnings[0]
    assert main([*argv, "--output", str(tmp_path / "b"), "--quiet"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main([*argv, "--output", str(tmp_path / "c"), "--time-tolerance",
                 "10000000 days"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_a_pipeline_step_prints_the_warning_with_its_name(restore_session, far_input,
                                                           tmp_path, capsys):
    import io

    from windowkit.cli.common import Progress
    from windowkit.pipeline.runner import PipelineRun, check_pipeline_inputs
    from windowkit.pipeline.spec import load_pipeline

    path = tmp_path / "p.toml"
    path.write_text(f'[pipeline]\noutput = "out"\nreport = ""\n[sources.flows]\n'
                    f'path = "{far_input}"\ntime = "ts"\n[steps.recent]\n'
                    'function = "windowed_count_min"\ninput = "flows"\nitem = "ip"\n'
                    'window = 7\nunit = "ticks"\ntick = "1 day"\nalgorithm = "simple"\n')
    pipeline = load_pipeline(str(path))
    PipelineRun(restore_session, pipeline, check_pipeline_inputs(pipeline),
                progress=Progress(stream=io.StringIO())).run()
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings) == 1
    assert warnings[0].startswith("windowkit: step 'recent': warning: the newest time of `ts`")
    assert "holds 1 of them" in warnings[0]
