"""What windowkit may replace in an output directory: the parts its manifest lists, holding
only Spark's own files or files windowkit wrote itself, unchanged."""

from __future__ import annotations

import os

import pytest

from windowkit.cli.ownership import (
    CHECKPOINT,
    FILE,
    MANIFEST,
    OUTPUT_MARK,
    check_part,
    claim_part,
    foreign_file,
    record_part,
    remove_part,
)

SPARK_FILES = ("batch=0/part-00000-1b2c-c000.snappy.parquet", "batch=0/.part-00000-1b2c-c000"
               ".snappy.parquet.crc", "batch=0/_SUCCESS", "batch=1/._SUCCESS.crc",
               "_staging/batch=2/part-00001-9f.snappy.parquet", "_temporary/0/task/x")


def _touch(root, *relatives, text="x"):
    for relative in relatives:
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)


@pytest.fixture
def output(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / OUTPUT_MARK).write_text("")
    return str(out)


def test_a_recorded_folder_of_sparks_own_files_may_be_replaced(output):
    claim_part(output, "reports")
    _touch(os.path.join(output, "reports"), *SPARK_FILES)
    assert foreign_file(output, "reports") is None
    remove_part(output, "reports")
    assert not os.path.exists(os.path.join(output, "reports"))


@pytest.mark.parametrize("mine", ["notes.txt", "batch=0/notes.txt", "sub/part-0.parquet",
                                  "_staging/keep.csv"])
def test_a_users_file_in_a_part_is_named_and_kept(output, mine):
    claim_part(output, "reports")
    _touch(os.path.join(output, "reports"), *SPARK_FILES[:3])
    _touch(os.path.join(output, "reports"), mine, text="precious")
    with pytest.raises(ValueError) as caught:
        remove_part(output, "reports")
    message = str(caught.value)
    assert "\n" not in message and f"reports/{mine} is not a file windowkit wrote" in message
    with open(os.path.join(output, "reports", mine)) as handle:
        assert handle.read() == "precious"


def test_a_file_windowkit_wrote_is_its_own_until_someone_changes_it(output):
    path = os.path.join(output, "report.html")
    _touch(output, "report.html", text="<html>")
    record_part(output, "report.html", FILE)
    assert foreign_file(output, "report.html", FILE) is None
    _touch(output, "report.html", text="<html> edited by hand")
    assert foreign_file(output, "report.html", FILE) == "report.html"
    assert os.path.exists(path)


def test_a_checkpoint_folder_holds_sparks_checkpoint_only(output):
    claim_part(output, "_checkpoints/f", CHECKPOINT)
    ck = os.path.join(output, "_checkpoints", "f")
    _touch(ck, "metadata", ".metadata.crc", "offsets/0", "commits/0", "sources/0/0",
           "state/0/0/1.changelog")
    assert foreign_file(output, "_checkpoints/f", CHECKPOINT) is None
    _touch(ck, "notes.txt")
    assert foreign_file(output, "_checkpoints/f", CHECKPOINT) == "_checkpoints/f/notes.txt"


def test_a_folder_the_manifest_does_not_list_is_not_windowkits(output):
    record_part(output, "reports")
    _touch(os.path.join(output, "copied"), "part-00000.parquet")  # Spark's names, not ours
    assert foreign_file(output, "copied") == "copied/part-00000.parquet"


def test_an_output_written_before_the_manifest_is_judged_by_sparks_names(output):
    assert not os.path.exists(os.path.join(output, MANIFEST))
    _touch(os.path.join(output, "frames"), *SPARK_FILES)
    _touch(os.path.join(output, "_checkpoints", "f"), "metadata", "offsets/0")
    _touch(output, "report.html")
    assert foreign_file(output, "frames") is None
    assert foreign_file(output, "_checkpoints/f", CHECKPOINT) is None
    # a file windowkit writes itself cannot be told from a user's: it is kept
    assert foreign_file(output, "report.html", FILE) == "report.html"
    _touch(os.path.join(output, "frames"), "notes.txt")
    assert foreign_file(output, "frames") == "frames/notes.txt"


def test_a_directory_without_the_mark_holds_nothing_of_windowkits(tmp_path):
    _touch(str(tmp_path / "frames"), "part-00000.parquet")
    with pytest.raises(ValueError, match="frames/part-00000.parquet is not a file windowkit"):
        check_part(str(tmp_path), "frames")


def test_a_link_inside_a_part_is_never_followed_nor_replaced(output, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    _touch(str(elsewhere), "part-00000.parquet")
    claim_part(output, "reports")
    os.mkdir(os.path.join(output, "reports"))
    os.symlink(elsewhere, os.path.join(output, "reports", "batch=0"))
    with pytest.raises(ValueError, match="reports/batch=0 is not a file windowkit wrote"):
        remove_part(output, "reports")
    assert (elsewhere / "part-00000.parquet").exists()
