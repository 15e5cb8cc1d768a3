"""Issue 16, points 3 and 4: a user's mistake is one line and exit code 2, before Spark starts
where it can be; nothing the user had in ``--output`` is deleted."""

from __future__ import annotations

import gzip

import pytest

from windowkit.cli import main

CSV = "router,ts,loss_rate\nr1,2024-01-01 00:00:00,0.001\n"


def frames(tmp_path, *extra, input_path=None, output=None):
    args = ["frames", "--input", str(input_path or tmp_path / "in.csv"), "--time", "ts",
            "--by", "router", "--when", "loss_rate > 0.003",
            "--output", str(output or tmp_path / "out"), *extra]
    return main(args)


@pytest.fixture
def csv_input(tmp_path):
    (tmp_path / "in.csv").write_text(CSV)
    return tmp_path / "in.csv"


def one_line_error(capsys) -> str:
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("windowkit: error: "), out
    return lines[0]


def test_a_missing_input_path(tmp_path, capsys):
    assert frames(tmp_path, input_path=tmp_path / "nope.csv") == 2
    assert "does not exist" in one_line_error(capsys)


def test_an_empty_file(tmp_path, capsys):
    (tmp_path / "in.csv").write_text("")
    assert frames(tmp_path) == 2
    assert "is empty" in one_line_error(capsys)


def test_a_directory_without_data_files(tmp_path, capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "_SUCCESS").write_text("")
    assert frames(tmp_path, input_path=tmp_path / "in") == 2
    assert "holds no data files" in one_line_error(capsys)


def test_the_format_comes_from_the_extension_gz_included(tmp_path, capsys):
    with gzip.open(tmp_path / "in.csv.gz", "wt") as handle:
        handle.write(CSV)
    # the misspelled column is found in the gzipped CSV's header: the format was inferred
    assert frames(tmp_path, "--by", "ruter", input_path=tmp_path / "in.csv.gz") == 2
    line = one_line_error(capsys)
    assert "`--by` names column 'ruter'" in line and "did you mean 'router'" in line


def test_an_unknown_extension_asks_for_the_format(tmp_path, capsys):
    (tmp_path / "in.txt").write_text(CSV)
    assert frames(tmp_path, input_path=tmp_path / "in.txt") == 2
    assert "pass `--format`" in one_line_error(capsys)


def test_the_wrong_format(tmp_path, csv_input, capsys):
    assert frames(tmp_path, "--format", "parquet") == 2
    assert "is not valid PARQUET" in one_line_error(capsys)


@pytest.mark.parametrize("option", ["--time", "--by"])
def test_a_misspelled_column(tmp_path, csv_input, capsys, option):
    assert frames(tmp_path, option, "tsx") == 2
    line = one_line_error(capsys)
    assert f"`{option}` names column 'tsx'" in line and "router, ts, loss_rate" in line


def test_an_unparsable_late(tmp_path, csv_input, capsys):
    assert frames(tmp_path, "--stream", "--checkpoint", str(tmp_path / "ck"),
                  "--late", "soonish") == 2
    assert "`--late` must be a positive duration" in one_line_error(capsys)


def test_shards_are_checked_before_spark(tmp_path, csv_input, capsys):
    assert frames(tmp_path, "--shards", "0") == 2
    assert "`--shards` must be an integer in [1, inf)" in one_line_error(capsys)


def test_an_output_that_is_a_file_or_under_a_file(tmp_path, csv_input, capsys):
    (tmp_path / "afile").write_text("mine")
    assert frames(tmp_path, output=tmp_path / "afile") == 2
    assert "is a file" in one_line_error(capsys)
    assert frames(tmp_path, output=tmp_path / "afile" / "sub") == 2
    assert "lies under the file" in one_line_error(capsys)
    assert (tmp_path / "afile").read_text() == "mine"


def test_a_directory_of_the_users_is_refused_and_kept(tmp_path, csv_input, capsys):
    out = tmp_path / "results"
    out.mkdir()
    (out / "report.xlsx").write_text("precious")
    assert frames(tmp_path, output=out) == 2
    assert "holds files windowkit did not write (report.xlsx)" in one_line_error(capsys)
    assert (out / "report.xlsx").read_text() == "precious"


def test_durations_list_the_accepted_units(tmp_path, csv_input, capsys):
    assert frames(tmp_path, "--schedule", "1 fortnight") == 2
    assert "weeks" in one_line_error(capsys)


def test_the_command_runs_as_a_program_without_traceback(tmp_path, csv_input):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "windowkit.cli", "frames", "--input",
                           str(tmp_path / "missing.csv"), "--time", "ts", "--when", "x > 1",
                           "--output", str(tmp_path / "o")], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stdout == "" and done.stderr.strip().splitlines() == [
        f"windowkit: error: `--input` {tmp_path / 'missing.csv'} does not exist"]
