"""Pipeline files: every mistake located before Spark starts; runs equal direct calls."""

from __future__ import annotations

import io
import os
from contextlib import redirect_stdout

import pandas as pd
import pytest

from tests.pipeline_files import line_of, write_pipeline
from windowkit.cli import main
from windowkit.cli.common import Progress
from windowkit.pipeline.runner import PipelineRun, check_pipeline_inputs
from windowkit.pipeline.spec import PipelineError, load_pipeline

GOOD = """\
[pipeline]
name = "routers"
output = "out"
report = ""

[sources.routers]
path = "routers.csv"
time = "time"
key = "router"

[steps.loss_frames]
function = "threshold_frames"
input = "routers"
when = "loss_rate > 0.003"
min_duration = "3 rows"

[steps.around]
function = "fill_frames"
input = "loss_frames"
data = "routers"
before = "2 minutes"

[steps.levels]
function = "multi_granular"
input = "routers"
levels = [["1 minute", "1 minute"], ["10 minutes", "5 minutes"]]
value = "loss_rate"

[sinks.frames_csv]
step = "loss_frames"
format = "csv"
path = "frames_csv"
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from windowkit.datasets.routers import router_readings

    path = tmp_path_factory.mktemp("pipeline")
    readings = router_readings(n_routers=4, duration="4 hours", seed=3)
    readings = readings.astype({"time": "datetime64[us, UTC]"})
    table = readings.assign(loss_rate=readings["loss_rate"].map(repr))
    table.loc[[5, 17], "loss_rate"] = ["n/a", "?"]  # two malformed values
    table.to_csv(path / "routers.csv", index=False)
    readings.to_parquet(path / "routers.parquet", index=False)
    return path


# --------------------------------------------------------------------- checked before Spark
MISTAKES = [
    # (replace this, with this, the line holding this, the message says this)
    ('name = "routers"', 'nmae = "routers"', "nmae", "[pipeline] has no key 'nmae' (did you "
     "mean 'name'?)"),
    ('min_duration = "3 rows"', 'min_duraton = "3 rows"', "min_duraton",
     "threshold_frames has no parameter 'min_duraton' (did you mean 'min_duration'?)"),
    ('when = "loss_rate > 0.003"\n', "", "[steps.loss_frames]", "(threshold_frames) needs `when`"),
    ('data = "routers"', 'data = "routerz"', 'data = "routerz"',
     "`data` names 'routerz', which is neither a source nor an earlier step"),
    ('input = "loss_frames"', 'input = "levels"', 'input = "levels"', "a later step"),
    ('before = "2 minutes"', 'before = "2 minuets"', "before", "`before`"),
    ('min_duration = "3 rows"', 'min_duration = "-3 rows"', "min_duration", "positive duration"),
    ('value = "loss_rate"', 'value = "loss"', 'value = "loss"',
     "`value` names column 'loss', which"),
    ('key = "router"', 'key = "ruter"', "ruter", "(did you mean 'router'?)"),
    ('function = "threshold_frames"', 'function = "treshold_frames"', "treshold",
     "unknown function 'treshold_frames' (did you mean 'threshold_frames'?)"),
    ('path = "routers.csv"', 'path = "nowhere.csv"', "nowhere", "does not exist"),
    ('step = "loss_frames"', 'step = "los_frames"', "los_frames", "names step 'los_frames'"),
    ('min_duration = "3 rows"', "min_duration = [3]", "min_duration", "`min_duration` = [3]"),
    ('report = ""', 'report = "x"\nreport = "y"', 'report = "y"', "not valid TOML"),
    ('[steps.around]', '[steps.rejected]', "[steps.rejected]", "a name is a letter"),
    ('["10 minutes", "5 minutes"]', '["10 minutes", "7 minutes"]', "[steps.levels]",
     "range 10 minutes must be a whole multiple of its slide 7 minutes"),
    # ranges the core checks, located at the key the message names
    ('value = "loss_rate"', 'value = "loss_rate"\ndistinct_precision = 99', "distinct_precision",
     "`distinct_precision`"),
    ('before = "2 minutes"', 'before = "2 minutes"\nstatuses = ["done"]', "statuses",
     "`statuses` holds frame statuses 'partial' and 'final'; got 'done'"),
    ('input = "loss_frames"', 'input = "routers"  # a source', "# a source",
     "fill_frames reads the output of a threshold_frames or"),
    # nothing is written outside the output folder, over a step's rows, or over a source
    ('path = "frames_csv"', 'path = "../victim"', "../victim", "must be a relative path inside"),
    ('report = ""', 'report = "/tmp/precious.txt"', "precious", "must be a relative path"),
    ('path = "frames_csv"', 'path = "levels"', 'path = "levels"',
     "would be written over step 'levels'"),
]


@pytest.mark.parametrize(("old", "new", "line_with", "says"), MISTAKES,
                         ids=[m[3][:40] for m in MISTAKES])
def test_a_mistake_in_a_pipeline_file_is_one_line_with_its_file_and_line(folder, old, new,
                                                                        line_with, says):
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    path = write_pipeline(folder, text, "broken.toml")
    with pytest.raises(PipelineError) as caught:
        check_pipeline_inputs(load_pipeline(path))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:{line_of(text, line_with)}: "), message
    assert says in message


def test_a_run_never_writes_where_a_source_lies(folder):
    text = GOOD.replace('output = "out"', 'output = "."').replace('path = "frames_csv"',
                                                                 'path = "routers.csv"')
    path = write_pipeline(folder, text, "overlap.toml")
    before = (folder / "routers.csv").read_text()
    with pytest.raises(PipelineError) as caught:
        check_pipeline_inputs(load_pipeline(path), overwrite=True)
    line = line_of(text, 'path = "routers.csv"')  # the source's path
    assert str(caught.value).startswith(f"{path}:{line}: source 'routers' ")
    assert "overlaps where the run writes sink 'frames_csv'" in str(caught.value)
    assert (folder / "routers.csv").read_text() == before


def test_the_cli_reports_a_broken_file_in_one_line_and_exits_2_before_spark(folder):
    path = write_pipeline(folder, GOOD.replace('min_duration = "3 rows"', 'min_duraton = "3 rows"'),
                  "broken.toml")
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["run", path, "--check"])
    assert code == 2
    line = line_of(GOOD, "min_duration")
    assert out.getvalue().startswith(f"windowkit: error: {path}:{line}: threshold_frames has no "
                                     "parameter 'min_duraton'")
    assert out.getvalue().count("\n") == 1


def test_a_good_file_checks_and_an_output_holding_a_users_files_is_refused(folder):
    path = write_pipeline(folder, GOOD)
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["run", path, "--check"]) == 0
    assert "1 sources and 3 steps checked" in out.getvalue()
    (folder / "mine").mkdir(exist_ok=True)
    (folder / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(PipelineError, match="holds files windowkit did not write"):
        check_pipeline_inputs(load_pipeline(path, output=str(folder / "mine")))
    assert (folder / "mine" / "notes.txt").read_text() == "keep me"


def test_every_shipped_pipeline_file_is_valid():
    from importlib import resources

    shipped = [f for f in resources.files("windowkit.pipelines").iterdir()
               if f.name.endswith(".toml")]
    assert shipped
    for file in shipped:
        pipeline = load_pipeline(str(file))
        assert pipeline.steps


# ------------------------------------------------------------------------------ on Spark
def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    columns = sorted(df.columns)
    return df[columns].sort_values(columns).reset_index(drop=True)


def _rows(df) -> pd.DataFrame:
    return _sorted(df.toPandas())


@pytest.mark.spark
def test_a_batch_run_writes_what_direct_calls_give_and_sets_rejected_rows_aside(spark, folder):
    from pyspark.sql import functions as F

    from windowkit.spark import (
        fill_frames,
        multi_granular,
        split_rejected,
        threshold_frames,
    )

    pipeline = load_pipeline(write_pipeline(folder, GOOD), output=str(folder / "batch"))
    summary = PipelineRun(spark, pipeline, check_pipeline_inputs(pipeline),
                          progress=Progress(stream=io.StringIO())).run()
    df = (spark.read.option("header", "true").option("inferSchema", "true")
          .csv(str(folder / "routers.csv")))
    frames, rejected = split_rejected(threshold_frames(df, "time", "loss_rate > 0.003",
                                                       by="router", min_duration="3 rows"))
    written = spark.read.parquet(str(folder / "batch" / "loss_frames"))
    assert _rows(written).equals(_rows(frames))
    filled, _ = split_rejected(fill_frames(frames, df, "time", by="router", before="2 minutes"))
    assert _rows(spark.read.parquet(str(folder / "batch" / "around"))).equals(_rows(filled))
    reports, _ = split_rejected(multi_granular(
        df, "time", levels=[("1 minute", "1 minute"), ("10 minutes", "5 minutes")], by="router",
        value="loss_rate"))
    assert _rows(spark.read.parquet(str(folder / "batch" / "levels"))).equals(_rows(reports))
    # the two malformed values are set aside by both steps reading the readings, with the row
    set_aside = spark.read.parquet(str(folder / "batch" / "rejected")).toPandas()
    assert sorted(set_aside["step"].unique()) == ["levels", "loss_frames"]
    frames_rejected = set_aside[set_aside["step"] == "loss_frames"]
    assert frames_rejected["reason"].tolist() == ["malformed"] * 2
    assert sorted(frames_rejected["detail"].str.extract(r'"loss_rate":"([^"]*)"')[0]) == \
        ["?", "n/a"]
    assert rejected.count() == 2
    by_step = {s.name: s for s in summary.steps}
    assert by_step["loss_frames"].rejected == {"malformed": 2, "late": 0}
    assert by_step["loss_frames"].rows_out == frames.count()
    assert by_step["levels"].rejected["malformed"] == 2
    csv = spark.read.option("header", "true").csv(str(folder / "batch" / "frames_csv"))
    assert csv.count() == frames.count()
    assert summary.sources[0].rows == df.count()
    assert written.filter(F.col("status") == "final").count() > 0


@pytest.mark.spark
def test_a_streaming_run_writes_the_same_frames_as_a_batch_run(spark, folder):
    readings = pd.read_parquet(folder / "routers.parquet").sort_values("time")
    parts = folder / "parts"
    parts.mkdir(exist_ok=True)
    for i in range(3):
        readings.iloc[i * len(readings) // 3:(i + 1) * len(readings) // 3].to_parquet(
            parts / f"part-{i}.parquet", index=False)
    text = GOOD.replace('path = "routers.csv"', 'path = "parts"\nwatermark = "10 minutes"')
    # the filler is a stored table: a stream-static join in the streaming run
    text = text.replace('[steps.loss_frames]', '[sources.table]\npath = "routers.parquet"\n'
                        'time = "time"\nkey = "router"\nstream = false\n\n[steps.loss_frames]')
    text = text.replace('data = "routers"', 'data = "table"')
    # a step that needs the whole input runs after the streams, over what they wrote
    text = text.replace('[steps.levels]', '[steps.longest]\nfunction = "longest_frame"\n'
                        'input = "loss_frames"\n\n[steps.levels]')
    both, summaries = {}, {}
    for mode in ("batch", "stream"):
        pipeline = load_pipeline(write_pipeline(folder, text, "s.toml"),
                                 output=str(folder / f"s_{mode}"))
        summaries[mode] = PipelineRun(spark, pipeline, check_pipeline_inputs(pipeline),
                                      stream=mode == "stream",
                                      progress=Progress(stream=io.StringIO())).run()
        both[mode] = {name: pd.read_parquet(folder / f"s_{mode}" / name)
                      for name in ("loss_frames", "around")}
    for name in ("loss_frames", "around"):
        streamed = both["stream"][name]
        if name == "loss_frames":
            assert streamed["batch"].nunique() >= 3  # several micro-batches
        assert _sorted(streamed.drop(columns="batch")).equals(_sorted(both["batch"][name]))
    assert os.path.isdir(folder / "s_stream" / "_checkpoints" / "loss_frames")
    assert os.path.isdir(folder / "s_stream" / "longest" / "batch=0")
    assert summaries["stream"].mode == "stream" and summaries["batch"].mode == "batch"
    streamed_longest = pd.read_parquet(folder / "s_stream" / "longest").drop(columns="batch")
    assert _sorted(streamed_longest).equals(_sorted(pd.read_parquet(folder / "s_batch" /
                                                                    "longest")))
    # every folder of a streaming run has its layout: Spark reads the rejected rows whole
    assert spark.read.parquet(str(folder / "s_stream" / "rejected")).count() == 0
    # a batch run over a streaming run's output would mix the two layouts
    pipeline = load_pipeline(str(folder / "s.toml"), output=str(folder / "s_stream"))
    with pytest.raises(PipelineError, match="holds a streaming run's rows; a batch run would "
                                            "mix them"):
        check_pipeline_inputs(pipeline)
    check_pipeline_inputs(pipeline, overwrite=True)  # replaces them
    assert not os.path.exists(folder / "s_stream" / "loss_frames")
    assert not os.path.exists(folder / "s_stream" / "_checkpoints" / "loss_frames")


class _Tracker:
    """A status tracker whose stage 7 advances one task per look."""

    def __init__(self) -> None:
        self.looks = 0

    def getActiveStageIds(self):  # noqa: N802 - Spark's name
        self.looks += 1
        return [7] if self.looks < 6 else []

    def getStageInfo(self, stage_id):  # noqa: N802
        from types import SimpleNamespace

        return SimpleNamespace(numCompletedTasks=min(self.looks, 4), numTasks=4)


def test_batch_progress_shows_the_running_stages_tasks_done_over_total():
    import time
    from types import SimpleNamespace

    from windowkit.pipeline.progress import StageProgress

    tracker = _Tracker()
    spark = SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: tracker))
    out = io.StringIO()
    with StageProgress(spark, Progress(stream=out), "step frames", every=0.0, poll=0.01):
        while tracker.looks < 8:
            time.sleep(0.01)
    lines = out.getvalue().splitlines()
    shown = [line.split("] ", 1)[1] for line in lines]
    assert [line.split(", ")[0] for line in shown[:4]] == [
        f"step frames: stage 7: tasks {i}/4" for i in range(1, 5)]
    # between jobs a piped line still comes every `every` seconds: the run is alive
    assert all(line == "step frames: waiting for Spark" for line in shown[5:])


def test_the_readmes_pipeline_example_is_a_valid_pipeline_file(tmp_path):
    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    example = readme.split("```toml\n", 1)[1].split("```", 1)[0]
    pipeline = load_pipeline(write_pipeline(tmp_path, example, "routers.toml"))
    assert [s.name for s in pipeline.steps] == ["loss_frames", "around"]
    assert pipeline.sinks["frames_csv"].format == "csv"
    mistake = example.replace("min_duration =", "min_duraton =")
    with pytest.raises(PipelineError) as caught:
        load_pipeline(write_pipeline(tmp_path, mistake, "routers.toml"))
    shown = readme.split("windowkit: error: ", 1)[1].split("...", 1)[0]
    assert str(caught.value).startswith(str(tmp_path / shown.split(":")[0]))
    assert shown.split(": ", 1)[1] in str(caught.value)
    assert f"routers.toml:{line_of(mistake, 'min_duraton')}:" in shown


@pytest.mark.spark
def test_a_single_file_source_is_read_as_a_stream_of_that_file_only(spark, folder, tmp_path):
    from windowkit.cli.common import inspect_input
    from windowkit.pipeline.runner import read_source
    from windowkit.pipeline.spec import SourceSection

    # beside the file: a folder in a streaming run's layout, which Spark must not discover
    (folder / "stream_out" / "batch=0").mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"x": [1]}).to_parquet(folder / "stream_out" / "batch=0" / "p.parquet")
    (folder / "stream_out" / "_staging").mkdir(exist_ok=True)
    source = SourceSection(path=str(folder / "routers.parquet"), time="time", key="router")
    stream = read_source(spark, source, inspect_input(source.path, None), stream=True)
    assert stream.isStreaming
    query = (stream.writeStream.format("parquet").option("path", str(tmp_path / "o"))
             .option("checkpointLocation", str(tmp_path / "c")).trigger(availableNow=True)
             .start())
    query.awaitTermination()
    # the folder also holds routers.csv and the runs' outputs: only the named file is read
    assert len(pd.read_parquet(tmp_path / "o")) == len(pd.read_parquet(folder / "routers.parquet"))


@pytest.mark.spark
def test_a_mistake_spark_finds_is_still_one_line_at_its_key(spark, folder):
    text = GOOD.replace('key = "router"', 'key = "router"\n'
                        'schema = "router strin, time timestamp, loss_rate double"', 1)
    path = write_pipeline(folder, text, "ddl.toml")
    pipeline = load_pipeline(path, output=str(folder / "ddl"))
    with pytest.raises(PipelineError) as caught:
        PipelineRun(spark, pipeline, check_pipeline_inputs(pipeline),
                    progress=Progress(stream=io.StringIO())).run()
    assert str(caught.value).startswith(f"{path}:{line_of(text, 'strin')}: source 'routers': ")
    assert "STRIN" in str(caught.value) and "\n" not in str(caught.value)


HEAD = '[pipeline]\noutput = "o"\n[sources.r]\npath = "r.csv"\ntime = "t"\n'
MALFORMED = [
    (HEAD + '[steps.f]\nfunction = ["threshold_frames"]\ninput = "r"\n', 7,
     "`function` is the name of one function"),
    ('[pipeline]\noutput = "o"\n# caf\xe9\n'.encode("latin-1"), 3, "not UTF-8 text"),
    (HEAD + '[[steps]]\nfunction = "x"\n', 6, "one [steps.NAME] table per entry, not [[steps]]"),
    (HEAD + 'options = {a = {b = 1}}\n[steps.f]\nfunction = "x"\n', 6,
     "`a` = {'b': 1} in [sources.r]: Input should be a valid string"),
    (HEAD + '[steps.f]\nfunction = "multi_granular"\ninput = "r"\nlevels = [["10 minutes"]]\n',
     9, "`levels` = [['10 minutes']] for multi_granular: an entry lacks a value"),
    (HEAD + '[steps.f]\nfunction = "threshold_frames"\ninput = "r"\nwhn = "x > 1"\n', 9,
     "has no parameter 'whn' (did you mean 'when'?)"),
    ('[pipeline]\nname = "x"\n', 1, "[pipeline] needs `output`"),
    (HEAD + '[steps.f]\nfunction = "widen_detect"\ninput = "r"\nlevels = 1\n', 8,
     "widen_detect matches system calls: its input needs a `call` column"),
    (HEAD + 'stream = "yes"\n[steps.f]\nfunction = "x"\n', 6,
     "`stream` = 'yes' in [sources.r]: Input should be a valid boolean"),
    ('', None, "the file needs a [pipeline] section"),
]


@pytest.mark.parametrize(("content", "line", "says"), MALFORMED,
                         ids=[m[2][:30] for m in MALFORMED])
def test_a_malformed_file_is_one_located_line_too(tmp_path, content, line, says):
    (tmp_path / "r.csv").write_text("t,x\n1,2\n")
    path = tmp_path / "m.toml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["run", str(path), "--check"])
    assert code == 2
    printed = out.getvalue()
    assert printed.count("\n") == 1
    assert printed.startswith(f"windowkit: error: {path}{f':{line}' if line else ''}: "), printed
    assert says in printed
