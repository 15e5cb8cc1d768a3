"""Trust at the edges of the command: a mistake in where Spark runs or where results go is one
line and exit code 2 before Spark starts; nothing of the user's is deleted; a pipeline file
writes only inside its folders.

The issue's own cases run the installed ``windowkit`` program with no Java reachable: a
command that reached Spark would fail on Java (exit code 1), so exit code 2 with the expected
line shows that it stopped before Spark. Their variants run ``main`` in this process with the
session factory replaced by one that records any call.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from windowkit.cli import main

CSV = "router,ts,loss_rate\nr1,2024-01-01 00:00:00,0.001\nr1,2024-01-01 00:00:10,0.005\n"
WINDOW = "RANGES 1 MINUTE SLIDES 30 SECONDS"


def windowkit(*args: str) -> str:
    """Run the ``windowkit`` program; assert exit code 2 and one line; return that line."""
    script = os.path.join(os.path.dirname(sys.executable), "windowkit")
    program = [script] if os.path.exists(script) else [sys.executable, "-m", "windowkit.cli"]
    env = {**os.environ, "PATH": os.path.dirname(sys.executable),
           "JAVA_HOME": os.path.join(os.sep, "no-java-here")}
    done = subprocess.run([*program, *args], capture_output=True, text=True, env=env,
                          timeout=300)
    lines = done.stderr.strip().splitlines()
    assert (done.returncode, done.stdout, len(lines)) == (2, "", 1), (done.returncode,
                                                                      done.stdout, done.stderr)
    assert lines[0].startswith("windowkit: error: ")
    return lines[0]


def _record_session(monkeypatch) -> dict:
    """Replace the session factory: record where it was asked to run, then stop the command."""
    import windowkit.spark.session

    asked = {}

    def fake(master=None, **kwargs):
        asked.update(master=master, remote=kwargs.get("remote"))
        raise KeyboardInterrupt  # the command's own exit (130), after its checks

    monkeypatch.setattr(windowkit.spark.session, "windowkit_session", fake)
    return asked


@pytest.fixture
def error_line(monkeypatch, capsys):
    """Run ``main``; assert exit code 2, one line and no session asked for; return the line."""
    asked = _record_session(monkeypatch)

    def run(*args: str) -> str:
        code = main(list(args))
        lines = capsys.readouterr().out.strip().splitlines()
        assert (code, len(lines), asked) == (2, 1, {}), (code, lines, asked)
        assert lines[0].startswith("windowkit: error: ")
        return lines[0]

    return run


@pytest.fixture
def csv_input(tmp_path):
    (tmp_path / "in.csv").write_text(CSV)
    return str(tmp_path / "in.csv")


def frames(csv_input, output, *extra):
    return ["frames", "--input", csv_input, "--time", "ts", "--by", "router",
            "--when", "loss_rate > 0.003", "--output", str(output), *extra]


def multigranular(csv_input, output, *extra):
    return ["multigranular", "--input", csv_input, "--time", "ts", "--by", "router",
            "--value", "loss_rate", "--window", WINDOW, "--output", str(output), *extra]


# ---------------------------------------------------------------- --overwrite deletes nothing
def test_overwrite_keeps_a_users_file_in_a_part_the_program(tmp_path, csv_input):
    notes = tmp_path / "o" / "reports" / "notes.txt"
    notes.parent.mkdir(parents=True)
    notes.write_text("notes")
    line = windowkit(*multigranular(csv_input, tmp_path / "o", "--overwrite"))
    assert line == (f"windowkit: error: `--output` {tmp_path / 'o'}: reports/notes.txt is not a "
                    "file windowkit wrote, and this run replaces reports; move it away or "
                    "choose another output")
    assert notes.read_text() == "notes"


@pytest.mark.parametrize(("command", "part"), [(frames, "frames"), (frames, "rejected"),
                                               (multigranular, "rejected")])
def test_overwrite_keeps_a_users_file_in_any_part(tmp_path, csv_input, error_line, command,
                                                  part):
    notes = tmp_path / "o" / part / "notes.txt"
    notes.parent.mkdir(parents=True)
    notes.write_text("notes")
    line = error_line(*command(csv_input, tmp_path / "o", "--overwrite"))
    assert f"`--output` {tmp_path / 'o'}: {part}/notes.txt is not a file windowkit" in line
    assert notes.read_text() == "notes"


@pytest.mark.spark
def test_a_rerun_replaces_what_windowkit_wrote_and_nothing_else(spark, tmp_path, csv_input,
                                                                capsys):
    out = tmp_path / "o"
    (out / "mine").mkdir(parents=True)
    (out / "mine" / "keep.txt").write_text("keep")
    assert main(frames(csv_input, out, "--overwrite")) == 0
    assert main(frames(csv_input, out)) == 0  # windowkit's own output: replaced
    assert len(list((out / "frames").glob("part-*.parquet"))) >= 1
    (out / "frames" / "notes.txt").write_text("notes")
    capsys.readouterr()
    assert main(frames(csv_input, out, "--overwrite")) == 2
    assert "frames/notes.txt is not a file windowkit wrote" in capsys.readouterr().out
    assert (out / "frames" / "notes.txt").read_text() == "notes"
    assert (out / "mine" / "keep.txt").read_text() == "keep"


# ----------------------------------------------------------------- where Spark runs, checked
def test_a_bad_master_is_one_line_before_spark_the_program(tmp_path, csv_input):
    line = windowkit(*frames(csv_input, tmp_path / "o", "--master", "local[*]; rm -rf X"))
    assert line.startswith("windowkit: error: `--master` 'local[*]; rm -rf X' is not a Spark "
                           "master URL; accepted: local, local[N], local[*], local[N,F], "
                           "local-cluster")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("master", ["locl[2]", "spark://host", "local[0]", "yarn cluster",
                                    "sc://host; ls"])
def test_a_bad_master_is_one_line_before_spark(tmp_path, csv_input, error_line, master):
    line = error_line(*frames(csv_input, tmp_path / "o", "--master", master))
    assert f"`--master` {master!r} is not a Spark " in line


@pytest.mark.parametrize("remote", ["sc://host; ls", "spark://host:7077", "http://host:15002"])
def test_a_bad_remote_is_one_line_before_spark(tmp_path, csv_input, error_line, remote):
    line = error_line(*frames(csv_input, tmp_path / "o", "--remote", remote))
    assert f"`--remote` {remote!r} is not a Spark Connect URL; accepted: sc://HOST" in line


@pytest.mark.parametrize("master", ["local[2]", "sc://localhost:15002"])
def test_master_and_remote_together_are_refused(tmp_path, csv_input, error_line, master):
    line = error_line(*frames(csv_input, tmp_path / "o", "--master", master,
                              "--remote", "sc://localhost:15002"))
    assert "give one of them" in line


@pytest.mark.parametrize("option", ["--master", "--remote"])
def test_an_sc_url_runs_on_spark_connect(tmp_path, csv_input, monkeypatch, option):
    asked = _record_session(monkeypatch)
    assert main(frames(csv_input, tmp_path / "o", option, "sc://localhost:15002")) == 130
    assert asked == {"master": None, "remote": "sc://localhost:15002"}


@pytest.mark.parametrize("command", ["frames", "fill", "countmin", "persistent", "widen",
                                     "multigranular", "run", "demo"])
def test_every_command_takes_remote(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert "--remote URL" in capsys.readouterr().out


# ------------------------------------------------------------------ --output checked early
def test_an_unwritable_output_is_named_before_spark(csv_input):
    line = windowkit(*frames(csv_input, "/proc/windowkit_out"))
    assert line.startswith("windowkit: error: `--output` /proc/windowkit_out is not writable: "
                           "cannot create a folder in /proc")


# ---------------------------------------------------------------------------- pipeline files
PIPELINE = """\
[pipeline]
output = "out"
{extra}
[sources.r]
path = "in.csv"
time = "ts"
key = "router"

[steps.f]
function = "threshold_frames"
input = "r"
when = "loss_rate > 0.003"
"""


@pytest.fixture
def pipeline_folder(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "in.csv").write_text(CSV)
    return folder


def _pipeline(folder, extra: str = "", replace: tuple[str, str] = ("", "")) -> str:
    text = PIPELINE.format(extra=textwrap.dedent(extra)).replace(*replace)
    (folder / "f.toml").write_text(text)
    return str(folder / "f.toml")


def _line(path: str, key: str) -> int:
    with open(path) as handle:
        return next(i for i, line in enumerate(handle, 1) if line.startswith(key))


def test_a_pipelines_checkpoint_out_of_its_folders_is_refused_the_program(pipeline_folder,
                                                                          tmp_path):
    path = _pipeline(pipeline_folder, 'checkpoint = "../../ck"')
    line = windowkit("run", path, "--stream")
    assert line == (f"windowkit: error: {path}:{_line(path, 'checkpoint')}: checkpoint "
                    "'../../ck' must be a relative path inside the output folder (a file or "
                    'folder name, e.g. "report.html")')
    assert not (tmp_path / "ck").exists() and not (pipeline_folder / "out").exists()


@pytest.mark.parametrize("checkpoint", ["/tmp/wk_ck", "../ck", "link/ck", "."])
def test_a_pipelines_checkpoint_stays_inside_its_output(pipeline_folder, tmp_path, error_line,
                                                        checkpoint):
    (pipeline_folder / "out").mkdir()
    os.symlink(tmp_path, pipeline_folder / "out" / "link")
    path = _pipeline(pipeline_folder, f'checkpoint = "{checkpoint}"')
    line = error_line("run", path, "--stream")
    assert line.startswith(f"windowkit: error: {path}:{_line(path, 'checkpoint')}: checkpoint "
                           f"{checkpoint!r} must be a relative path inside the output folder")


def test_a_pipelines_checkpoint_inside_its_output_is_used(pipeline_folder):
    from windowkit.pipeline.spec import load_pipeline

    pipeline = load_pipeline(_pipeline(pipeline_folder, 'checkpoint = "state/ck"'))
    assert pipeline.checkpoint == str(pipeline_folder / "out" / "state" / "ck")


@pytest.mark.parametrize("key", ["report", "sink"])
def test_a_report_or_sink_behind_a_link_leading_out_is_refused(pipeline_folder, tmp_path,
                                                               error_line, key):
    (pipeline_folder / "out").mkdir()
    os.symlink(tmp_path, pipeline_folder / "out" / "away")
    extra = 'report = "away/r.html"' if key == "report" else ""
    sink = '\n[sinks.c]\nstep = "f"\nformat = "csv"\npath = "away/c"\n' if key == "sink" else ""
    path = _pipeline(pipeline_folder, extra, ('when = "loss_rate > 0.003"\n',
                                              f'when = "loss_rate > 0.003"\n{sink}'))
    line = error_line("run", path, "--check")
    assert "'away/" in line and "must be a relative path inside the output folder" in line


@pytest.mark.parametrize("output", ["../elsewhere", "/tmp/wk_elsewhere", "link/out"])
def test_a_pipelines_output_stays_inside_its_folder(pipeline_folder, tmp_path, error_line,
                                                    output):
    os.symlink(tmp_path, pipeline_folder / "link")
    path = _pipeline(pipeline_folder, replace=('output = "out"', f'output = "{output}"'))
    line = error_line("run", path, "--check")
    assert line.startswith(f"windowkit: error: {path}:{_line(path, 'output')}: `output` "
                           f"{output!r} must be a relative path inside the pipeline file's")
    assert "pass --output to write elsewhere" in line


def test_a_pipelines_output_elsewhere_is_the_command_lines_choice(pipeline_folder, tmp_path,
                                                                  capsys):
    path = _pipeline(pipeline_folder, replace=('output = "out"', 'output = "../elsewhere"'))
    assert main(["run", path, "--check", "--output", str(tmp_path / "elsewhere")]) == 0
    assert "1 sources and 1 steps checked" in capsys.readouterr().out


def test_a_bad_master_in_a_pipeline_is_one_located_line_the_program(pipeline_folder):
    path = _pipeline(pipeline_folder, 'master = "local[*]; rm -rf X"')
    line = windowkit("run", path)
    assert line.startswith(f"windowkit: error: {path}:{_line(path, 'master')}: `master` "
                           "'local[*]; rm -rf X' is not a Spark master URL; accepted: local")
    assert not (pipeline_folder / "out").exists()


@pytest.mark.parametrize(("extra", "key", "says"), [
    ('remote = "sc://h:15002;x"', "remote", "`remote` 'sc://h:15002;x' is not a Spark Connect"),
    ('master = "local[2]"\nremote = "sc://h"', "master", "give one of them"),
    ('master = "spark://h"', "master", "`master` 'spark://h' is not a Spark master URL"),
])
def test_a_bad_master_or_remote_in_a_pipeline_is_one_located_line(pipeline_folder, error_line,
                                                                  extra, key, says):
    path = _pipeline(pipeline_folder, extra)
    line = error_line("run", path)
    assert line.startswith(f"windowkit: error: {path}:{_line(path, key)}: ") and says in line


def test_the_pipelines_remote_or_the_command_lines_master_is_used(pipeline_folder,
                                                                    monkeypatch):
    asked = _record_session(monkeypatch)
    path = _pipeline(pipeline_folder, 'remote = "sc://h:15002"')
    assert main(["run", path]) == 130
    assert asked == {"master": None, "remote": "sc://h:15002"}
    assert main(["run", path, "--master", "local[2]"]) == 130
    assert asked == {"master": "local[2]", "remote": None}


def test_a_pipelines_unwritable_output_names_the_option(pipeline_folder, error_line):
    line = error_line("run", _pipeline(pipeline_folder), "--output", "/proc/windowkit_out")
    assert "`--output` /proc/windowkit_out is not writable" in line


def test_a_pipelines_unwritable_output_is_located_at_its_key(pipeline_folder, monkeypatch):
    import errno
    import tempfile

    from windowkit.pipeline.runner import check_pipeline_inputs
    from windowkit.pipeline.spec import PipelineError, load_pipeline

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    path = _pipeline(pipeline_folder)
    monkeypatch.setattr(tempfile, "mkdtemp", read_only)
    with pytest.raises(PipelineError) as caught:
        check_pipeline_inputs(load_pipeline(path))
    assert str(caught.value) == (
        f"{path}:{_line(path, 'output')}: `output` {pipeline_folder / 'out'} is not writable: "
        f"cannot create a folder in {pipeline_folder} (Read-only file system)")


def test_a_pipeline_refuses_to_replace_a_users_file_in_a_step_folder(pipeline_folder,
                                                                     error_line):
    notes = pipeline_folder / "out" / "f" / "notes.txt"
    notes.parent.mkdir(parents=True)
    notes.write_text("notes")
    path = _pipeline(pipeline_folder)
    line = error_line("run", path, "--overwrite")
    assert line.startswith(f"windowkit: error: {path}:{_line(path, 'output')}: `output` ")
    assert "f/notes.txt is not a file windowkit wrote" in line
    assert notes.read_text() == "notes"
