"""Issue 38, the command line a first-time user meets: every option works, its help says what
it does and its default, a mistake is one line naming the option (with a "did you mean"),
found before Spark starts wherever the input's header or schema can tell.

The checks that must happen before Spark starts run the ``windowkit`` program with no Java
reachable: a command that reached Spark would fail on Java (exit code 1), so exit code 2 with
the expected line shows that it stopped before Spark.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pandas as pd
import pytest

from windowkit.cli import build_parser


def command_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of subcommand ``name``."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]

CSV = ("router,ts,loss_rate\n" + "".join(
    f"r1,2024-01-01 00:{m:02d}:00,{v}\n" for m, v in enumerate(
        (0.001, 0.004, 0.005, 0.0, 0.006, 0.002, 0.007, 0.001, 0.0, 0.008))))
SUBCOMMANDS = ("frames", "fill", "multigranular", "widen", "persistent", "countmin", "demo",
               "run")


def windowkit(*args: str, env: dict[str, str] | None = None,
              java: bool = True) -> subprocess.CompletedProcess:
    """Run the ``windowkit`` program (without Java when ``java`` is False)."""
    script = os.path.join(os.path.dirname(sys.executable), "windowkit")
    program = [script] if os.path.exists(script) else [sys.executable, "-m", "windowkit.cli"]
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
           **(env or {})}
    if not java:
        env.update(PATH=os.path.dirname(sys.executable),
                   JAVA_HOME=os.path.join(os.sep, "no-java-here"))
    return subprocess.run([*program, *args], capture_output=True, text=True, env=env,
                          timeout=600)


def error_line(*args: str, env: dict[str, str] | None = None) -> str:
    """Run ``windowkit`` without Java; assert exit code 2 and one line on stderr; return it."""
    done = windowkit(*args, env=env, java=False)
    lines = done.stderr.strip().splitlines()
    assert (done.returncode, done.stdout, len(lines)) == (2, "", 1), (done.returncode,
                                                                      done.stdout, done.stderr)
    return lines[0]


@pytest.fixture
def readings(tmp_path):
    path = tmp_path / "readings.csv"
    path.write_text(CSV)
    return path


@pytest.fixture
def readings_parquet(tmp_path):
    path = tmp_path / "readings.parquet"
    table = pd.read_csv(pd.io.common.StringIO(CSV), parse_dates=["ts"])
    table["up"] = table["loss_rate"] < 0.005
    table.to_parquet(path)
    return path


# ------------------------------------------------------------------------- parsing and help
@pytest.mark.spark
def test_issue_38_aggregate_frames_run_from_the_command_line(readings, tmp_path):
    from windowkit.core.frames import AggregateFramer

    out = tmp_path / "out"
    done = windowkit("frames", "--kind", "aggregate", "--value", "loss_rate", "--func", "sum",
                     "--op", ">=", "--x", "0.009", "--input", str(readings), "--time", "ts",
                     "--by", "router", "--output", str(out), "--master", "local[1]")
    assert done.returncode == 0, done.stderr[-3000:]
    got = pd.read_parquet(out / "frames")
    rows = pd.read_csv(readings, parse_dates=["ts"])
    framer = AggregateFramer("sum", ">=", 0.009)
    expected = pd.concat([framer.update(micros(rows["ts"]), rows["loss_rate"].to_numpy(),
                                        key=rows["router"].to_numpy()), framer.finish()])
    assert len(expected) > 1  # the data makes several frames

    def frames(df: pd.DataFrame) -> list[tuple]:
        return sorted(zip(micros(df["start"]), micros(df["last"]), df["n_tuples"],
                          df["status"], strict=True))

    assert frames(got) == frames(expected)


def micros(times: pd.Series) -> list[int]:
    """Times (naive ones are UTC, as Spark's session writes them) as epoch microseconds."""
    if pd.api.types.is_integer_dtype(times):
        return [int(t) for t in times]
    stamps = pd.to_datetime(times, utc=True)
    return [int((t - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(microseconds=1)) for t in stamps]


def test_issue_38_every_option_has_help_and_shows_its_default():
    parser = build_parser()
    for name in SUBCOMMANDS:
        done = windowkit(name, "--help")
        assert done.returncode == 0, done.stderr
        text = " ".join(done.stdout.split())
        for noise in ("%%", "``", "(default: None)", "(default: False)"):
            assert noise not in text, (name, noise)
        sub = command_parser(parser, name)
        for action in sub._actions:
            assert action.help, (name, action.option_strings)
            if action.default not in (None, False, argparse.SUPPRESS) and action.option_strings:
                shown = " ".join(action.help.split())
                assert (f"(default: {action.default})" in text
                        or "default" in shown.lower()), (name, action.option_strings)


def test_issue_38_version_from_the_package_metadata():
    import importlib.metadata

    done = windowkit("--version")
    assert (done.returncode, done.stdout.strip()) == (
        0, f"windowkit {importlib.metadata.version('windowkit')}")


@pytest.mark.parametrize(("typed", "meant"), [("--min_duration", "--min-duration"),
                                              ("--fragment-evry", "--fragment-every")])
def test_issue_38_a_misspelled_flag_is_one_line_with_a_suggestion(readings, tmp_path, typed,
                                                                  meant):
    line = error_line("frames", "--input", str(readings), "--time", "ts", "--when", "ts > 0",
                      "--output", str(tmp_path / "out"), typed, "3 rows")
    assert line == f"windowkit frames: unknown option {typed}; did you mean {meant}?"


def test_issue_38_other_argparse_mistakes_are_one_line_too(tmp_path):
    line = error_line("frames", "--kind", "tresholds")
    assert line.startswith("windowkit frames: ") and "did you mean 'threshold'?" in line
    line = error_line("frmes", "--input", "x")
    assert line.startswith("windowkit: ") and "did you mean 'frames'?" in line


# ------------------------------------------------------------------ messages name the flags
def test_issue_38_a_core_message_names_the_options(readings, tmp_path):
    line = error_line("countmin", "--input", str(readings), "--item", "router", "--time", "ts",
                      "--unit", "ticks", "--window", "7", "--output", str(tmp_path / "out"))
    assert line.startswith("windowkit: error: `--tick` is required with --unit ticks"), line


def test_issue_38_a_value_of_the_wrong_form_names_its_option(readings, tmp_path):
    line = error_line("multigranular", "--input", str(readings), "--time", "ts", "--window",
                      "RANGES 1 HOUR SLIDES 1 MINUTE", "--weights", "1,half", "--output",
                      str(tmp_path / "out"))
    assert line.startswith("windowkit: error: `--weights` must be comma-separated numbers")


def test_issue_38_fill_blames_the_frames_option_for_its_frames(readings, tmp_path):
    line = error_line("fill", "--frames", str(tmp_path / "nope" / "frames"), "--input",
                      str(readings), "--time", "ts", "--output", str(tmp_path / "out"))
    assert line.startswith("windowkit: error: `--frames` ") and "does not exist" in line


# -------------------------------------------------------------- predicates before Spark
@pytest.mark.parametrize(("when", "expected"), [
    ("loss_rat > 0.003", "names column 'loss_rat', which"),
    ("loss_rate >", "is not valid Spark SQL"),
    ("loss_rate * 2", "is not a predicate"),
])
def test_issue_38_a_mistake_in_when_is_found_before_spark(readings, tmp_path, when, expected):
    line = error_line("frames", "--input", str(readings), "--time", "ts", "--when", when,
                      "--output", str(tmp_path / "out"))
    assert line.startswith(f"windowkit: error: `--when` {when!r} ") and expected in line
    if "names column" in expected:
        assert "did you mean 'loss_rate'?" in line


@pytest.mark.parametrize(("when", "expected"), [
    ("loss_rate", "column loss_rate is of type double"),
    ("up AND loss_rate", "column loss_rate is of type double"),
])
def test_issue_38_a_parquet_schema_tells_a_predicate_that_is_not_boolean(
        readings_parquet, tmp_path, when, expected):
    line = error_line("frames", "--input", str(readings_parquet), "--time", "ts", "--when", when,
                      "--output", str(tmp_path / "out"))
    assert "is not a predicate (true or false)" in line and expected in line


def test_issue_38_a_column_missing_from_an_aggregate_is_found_before_spark(readings, tmp_path):
    (tmp_path / "frames").mkdir()
    pd.DataFrame({"router": ["r1"]}).to_parquet(tmp_path / "frames" / "part-0.parquet")
    line = error_line("fill", "--frames", str(tmp_path / "frames"), "--input", str(readings),
                      "--time", "ts", "--aggregate", "peak=max(loss)", "--output",
                      str(tmp_path / "out"))
    assert "`--aggregate` 'max(loss)' names column 'loss'" in line


PIPELINE = """\
[pipeline]
output = "out"
report = ""

[sources.routers]
path = "{path}"
time = "ts"
key = "router"

[steps.loss]
function = "threshold_frames"
input = "routers"
when = "{when}"
"""


def test_issue_38_a_pipeline_predicate_is_checked_by_check(readings, tmp_path):
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(PIPELINE.format(path=readings, when="loss_rat > 0.003"))
    line = error_line("run", str(pipeline), "--check")
    assert f"{pipeline}:13:" in line and "`when` 'loss_rat > 0.003' names column" in line
    assert "did you mean 'loss_rate'?" in line


def test_issue_38_a_pipeline_predicate_over_parquet_must_be_boolean(readings_parquet, tmp_path):
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(PIPELINE.format(path=readings_parquet, when="loss_rate / 2"))
    line = error_line("run", str(pipeline), "--check")
    assert "`when` 'loss_rate / 2' is not a predicate" in line


KAFKA = """\
[pipeline]
output = "out"
report = ""

[sources.routers]
path = "readings"
format = "kafka"
time = "ts"
key = "router"
schema = "router string, ts timestamp, loss_rate double"
options = {{ "kafka.bootstrap.servers" = "localhost:9092" }}

[steps.loss]
function = "threshold_frames"
input = "routers"
when = "loss_rate > 0.003"
"""


def test_issue_38_check_says_when_spark_cannot_load_kafka(tmp_path):
    import importlib.metadata

    pipeline = tmp_path / "kafka.toml"
    pipeline.write_text(KAFKA.format())
    bare = {"SPARK_HOME": str(tmp_path), "SPARK_CONF_DIR": str(tmp_path),
            "PYSPARK_SUBMIT_ARGS": ""}
    line = error_line("run", str(pipeline), "--check", env=bare)
    package = (f"org.apache.spark:spark-sql-kafka-0-10_2.13:"
               f"{importlib.metadata.version('pyspark')}")
    assert f"{pipeline}:7:" in line and "format 'kafka'" in line and package in line
    # with the package in spark-defaults.conf, the file passes its check
    (tmp_path / "spark-defaults.conf").write_text(f"spark.jars.packages  {package}\n")
    done = windowkit("run", str(pipeline), "--check", env=bare, java=False)
    assert done.returncode == 0 and "checked" in done.stdout, done.stderr


# ------------------------------------------------------------------ Spark's log, defaults
def test_issue_38_spark_submit_sessions_start_with_spark_log_off():
    from windowkit.spark.session import _classic_conf

    submitted = _classic_conf("local[1]", True, None, None, quiet=True)
    # spark-submit's JVM runs with its own log configuration: Spark applies this level as the
    # context starts; a driver option would not reach a JVM that is already running
    assert submitted["spark.log.level"] == "OFF"
    assert "spark.driver.extraJavaOptions" not in submitted
    assert "spark.log.level" not in _classic_conf("local[1]", True, None, None, quiet=False)


@pytest.mark.spark
def test_issue_38_persistent_items_print_their_guarantee(tmp_path):
    rows = [f"h{h},2024-01-01 00:{m:02d}:{s:02d}" for m in range(4) for s in (0, 30)
            for h in range(3) if (h + m + s) % 2 == 0 or h == 0]
    (tmp_path / "flows.csv").write_text("host,ts\n" + "\n".join(rows) + "\n")
    done = windowkit("persistent", "--input", str(tmp_path / "flows.csv"), "--item", "host",
                     "--time", "ts", "--slot", "30 seconds", "--window-slots", "4",
                     "--output", str(tmp_path / "out"), "--master", "local[1]")
    assert done.returncode == 0, done.stderr[-3000:]
    guarantee = [line for line in done.stdout.splitlines() if line.startswith("guarantee:")]
    assert len(guarantee) == 1, done.stdout
    # the default: a persistent item missed with probability at most 0.01, from the sketch
    # instances that take (one instance alone: up to e^-2, about 0.135)
    assert "missed with probability at most 0.01 (3 sketch instances)" in guarantee[0]
    assert "h0" in set(pd.read_parquet(tmp_path / "out" / "persistent")["host"])


def test_issue_38_the_cli_and_the_api_share_the_persistent_default():
    import inspect

    from windowkit.spark.persistent import persistent_items

    parser = command_parser(build_parser(), "persistent")
    cli = parser.parse_args(["--input", "i", "--output", "o", "--item", "x", "--time", "t"])
    assert inspect.signature(persistent_items).parameters["delta"].default == cli.delta
    help_text = " ".join(parser.format_help().split())
    assert "instance misses with probability up to e^-2, about 0.135) (default: 0.01)" in help_text
