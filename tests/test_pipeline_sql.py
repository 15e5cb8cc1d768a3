"""Pipeline ``sql`` steps: queries over the sources and earlier steps by name, calling windowkit's
SQL table functions; their mistakes located before Spark starts (issue #37, point 4)."""

from __future__ import annotations

import io
import re
import textwrap
from contextlib import redirect_stdout
from pathlib import Path

import pandas as pd
import pytest

from tests.pipeline_files import line_of, write_pipeline
from windowkit.cli import main
from windowkit.cli.common import Progress
from windowkit.pipeline.runner import PipelineRun, check_pipeline_inputs
from windowkit.pipeline.spec import PipelineError, load_pipeline

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
#: The README's example of sql steps: the first ``toml`` block after its heading.
SQL_EXAMPLE = README.split("### SQL steps", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]

#: A pipeline's head: its output and one source.
SOURCE = """\
[pipeline]
output = "out"
report = ""

[sources.routers]
path = "routers.parquet"
time = "time"
key = "router"
"""
#: The pipeline the README's sql steps belong to: a source and a function step they read.
HEAD = SOURCE + """
[steps.loss_frames]
function = "threshold_frames"
input = "routers"
when = "loss_rate > 0.003"
min_duration = "3 rows"
"""
GOOD = HEAD + "\n" + SQL_EXAMPLE


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from windowkit.datasets.routers import router_readings

    path = tmp_path_factory.mktemp("pipeline_sql")
    readings = router_readings(n_routers=4, duration="4 hours", seed=3)
    readings = readings.astype({"time": "datetime64[us, UTC]"})
    readings.loc[[5, 17], "time"] = pd.NaT  # two malformed rows, set aside by both steps
    readings.to_parquet(path / "routers.parquet", index=False)
    return path


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    columns = sorted(df.columns)
    return df[columns].sort_values(columns).reset_index(drop=True)


# --------------------------------------------------------------------- checked before Spark
MISTAKES = [
    # (replace this, with this, the line holding this, the message says this, run's options)
    ("TABLE(routers)", "TABLE(long_losses)", 'sql = """SELECT',
     "`sql` reads table 'long_losses', a later step (steps run in the order of the file)", ()),
    ("FROM loss_frames", "FROM los_frames", 'sql = """\n',
     "`sql` reads table 'los_frames', which is neither a source nor an earlier step (did you "
     "mean 'loss_frames'?); accepted: routers, loss_frames, frames_sql", ()),
    ("SELECT router, start", "SELECT router start, FROM", 'sql = """\n',
     "`sql`: the query is not valid Spark SQL at line 1, column ", ()),
    ("[steps.frames_sql]", '[steps.frames_sql]\nfunction = "delta_frames"',
     'function = "delta_frames"', "has both `function` and `sql`", ()),
    ('sql = """SELECT', 'sqll = """SELECT', "[steps.frames_sql]",
     "[steps.frames_sql] needs `function` (accepted: ", ()),
    ("windowkit_threshold_frames", "windowkit_treshold_frames", 'sql = """SELECT',
     "windowkit has no SQL table function 'windowkit_treshold_frames' (did you mean "
     "'windowkit_threshold_frames'?)", ()),
    # a stream as a table function's TABLE argument: Spark would refuse it when the query starts
    ("[steps.frames_sql]", "[steps.frames_sql]", 'sql = """SELECT',
     "step 'frames_sql': 'routers' is a stream in this run, and Spark refuses a stream as a "
     "table function's TABLE argument", ("--stream",)),
]


@pytest.mark.parametrize(("old", "new", "line_with", "says", "options"), MISTAKES,
                         ids=[m[3][:40] for m in MISTAKES])
def test_a_sql_steps_mistake_is_one_located_line_and_exit_2_before_spark(
        folder, monkeypatch, old, new, line_with, says, options):
    import windowkit.spark.session as session

    def no_spark(*args, **kwargs):
        msg = "Spark started"
        raise AssertionError(msg)

    monkeypatch.setattr(session, "windowkit_session", no_spark)
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    path = write_pipeline(folder, text, "broken.toml")
    # the line: the first line of the fragment, counted from the fragment's first match
    line = text[:text.index(line_with)].count("\n") + 1
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["run", path, *options])
    printed = out.getvalue()
    assert code == 2, printed
    assert printed.count("\n") == 1, printed
    assert printed.startswith(f"windowkit: error: {path}:{line}: "), printed
    assert says in printed, printed


def test_a_sql_steps_tables_are_its_inputs_in_the_order_of_the_file(folder):
    text = GOOD + textwrap.dedent("""
        [steps.both]
        sql = '''WITH long AS (SELECT * FROM LONG_LOSSES)
                 SELECT * FROM long JOIN routers USING (router)'''
        """)
    pipeline = load_pipeline(write_pipeline(folder, text, "inputs.toml"))
    by_name = {step.name: step for step in pipeline.steps}
    assert by_name["frames_sql"].inputs == {"routers": "routers"}
    assert by_name["long_losses"].inputs == {"loss_frames": "loss_frames"}
    # a name is a view's, resolved without regard to case; a WITH name is the query's own
    assert by_name["both"].inputs == {"long_losses": "long_losses", "routers": "routers"}
    assert by_name["both"].function == "sql"


# ------------------------------------------------------------------------------ on Spark
@pytest.mark.spark
def test_sql_steps_give_the_dataframe_functions_rows_and_its_rejected_rows(spark, folder):
    from windowkit.report.render import render_report, step_view
    from windowkit.spark import split_rejected, threshold_frames

    pipeline = load_pipeline(write_pipeline(folder, GOOD), output=str(folder / "batch"))
    summary = PipelineRun(spark, pipeline, check_pipeline_inputs(pipeline),
                          progress=Progress(stream=io.StringIO())).run()
    df = spark.read.parquet(str(folder / "routers.parquet"))
    frames, rejected = split_rejected(threshold_frames(
        df, "time", "loss_rate > 0.003", by="router", min_duration="3 rows"))
    expected = _sorted(frames.toPandas())
    # the table function's call on the source: the DataFrame function's rows
    written = _sorted(pd.read_parquet(folder / "batch" / "frames_sql"))
    assert len(written) > 3
    assert written.astype(str).equals(expected.astype(str))
    # ...and its rejected rows, set aside as the function step's are
    set_aside = spark.read.parquet(str(folder / "batch" / "rejected")).toPandas()
    by_step = {name: rows.drop(columns="step").sort_values("detail").reset_index(drop=True)
               for name, rows in set_aside.groupby("step")}
    assert sorted(by_step) == ["frames_sql", "loss_frames"]
    assert by_step["frames_sql"]["reason"].tolist() == ["malformed"] * rejected.count() == \
        ["malformed"] * 2
    assert by_step["frames_sql"].equals(by_step["loss_frames"])
    # a query over an earlier step's output: pandas' own filter of the function's frames
    long = expected[expected["end"] - expected["start"] > pd.Timedelta(minutes=10)]
    assert 0 < len(long) < len(expected)
    written = _sorted(pd.read_parquet(folder / "batch" / "long_losses"))
    assert list(written.columns) == ["end", "router", "start"]
    assert written.astype(str).equals(_sorted(long[["router", "start", "end"]]).astype(str))
    steps = {step.name: step for step in summary.steps}
    assert steps["frames_sql"].rows_out == len(expected)
    assert steps["frames_sql"].rejected == {"malformed": 2, "late": 0}
    assert steps["long_losses"].rows_out == len(long)
    assert steps["long_losses"].rejected == {"malformed": 0, "late": 0}
    # the report shows the step's query and the tables it read
    view = step_view(steps["long_losses"], summary)
    assert view.function == "sql" and view.inputs == [("loss_frames", "loss_frames")]
    page = render_report(summary, [view])
    assert "`end` - start &gt; INTERVAL 10 MINUTES" in page
    assert re.search(r'<span class="inherited">loss_frames</span>', page)


@pytest.mark.spark
def test_a_sql_step_over_a_stream_is_a_stream_and_what_spark_refuses_is_one_line(spark, folder):
    text = SOURCE + textwrap.dedent("""
        [steps.lossy]
        sql = "SELECT router, time, loss_rate FROM routers WHERE loss_rate > 0.003"
        """)
    runs = {}
    for mode in ("batch", "stream"):
        pipeline = load_pipeline(write_pipeline(folder, text, "s.toml"), output=str(folder / mode))
        PipelineRun(spark, pipeline, check_pipeline_inputs(pipeline, stream=mode == "stream"),
                    stream=mode == "stream", progress=Progress(stream=io.StringIO())).run()
        runs[mode] = pd.read_parquet(folder / mode / "lossy")
    assert (folder / "stream" / "_checkpoints" / "lossy").is_dir()  # a query of a stream
    expected = pd.read_parquet(folder / "routers.parquet").query("loss_rate > 0.003")
    # Spark's Parquet times read back without their zone: the same instants, in UTC
    expected["time"] = expected["time"].dt.tz_convert("UTC").dt.tz_localize(None)
    assert _sorted(runs["stream"].drop(columns="batch")).astype(str).equals(
        _sorted(runs["batch"]).astype(str))
    assert _sorted(runs["batch"]).astype(str).equals(_sorted(expected).astype(str))
    # an aggregation of a stream without a watermark: Spark refuses to start the query
    counted = text.replace('"SELECT router, time, loss_rate FROM routers WHERE loss_rate > '
                           '0.003"', '"SELECT router, count(*) AS n FROM routers GROUP BY router"')
    path = write_pipeline(folder, counted, "agg.toml")
    pipeline = load_pipeline(path, output=str(folder / "agg"))
    with pytest.raises(PipelineError) as caught:
        PipelineRun(spark, pipeline, check_pipeline_inputs(pipeline, stream=True), stream=True,
                    progress=Progress(stream=io.StringIO())).run()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:{line_of(counted, '[steps.lossy]')}: step 'lossy': ")
    assert "watermark" in message.lower(), message
