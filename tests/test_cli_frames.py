"""The ``windowkit frames`` command on a small CSV: batch and --stream give the same frames."""

from __future__ import annotations

import pandas as pd
import pytest

from windowkit.cli import main

pytestmark = pytest.mark.spark

CSV = """router,ts,loss_rate
r1,2024-01-01 00:00:00,0.001
r1,2024-01-01 00:00:30,0.005
r1,2024-01-01 00:01:00,0.006
r1,2024-01-01 00:01:30,n/a
r1,2024-01-01 00:02:00,0.007
r1,2024-01-01 00:02:30,0.001
r2,not-a-time,0.009
r2,2024-01-01 00:00:00,0.004
r2,2024-01-01 00:00:30,0.004
r2,2024-01-01 00:01:00,0.004
r2,2024-01-01 00:01:30,0.000
"""


def run_cli(tmp_path, *extra):
    (tmp_path / "in").mkdir(parents=True, exist_ok=True)
    (tmp_path / "in" / "readings.csv").write_text(CSV)
    out = tmp_path / "out"
    code = main(["frames", "--input", str(tmp_path / "in"), "--format", "csv", "--time", "ts",
                 "--by", "router", "--when", "loss_rate > 0.003", "--min-duration", "3 rows",
                 "--output", str(out), *extra])  # a later --min-duration in extra wins
    assert code == 0
    return pd.read_parquet(out / "frames"), pd.read_parquet(out / "rejected")


def test_cli_frames_batch_sets_malformed_rows_aside(spark, tmp_path):
    # r1: .  #  #  ?  #  .      '?' = 'n/a' cannot be evaluated: a report of unknown value,
    #        [----)  [-)        set aside as malformed and a missing value for the framing,
    #                           which breaks the frame (issue 16; it was bridged before)
    # r2: #  #  #  .            the row with an unparsable time is set aside
    #     [-------)
    frames, rejected = run_cli(tmp_path, "--min-duration", "1 rows")
    final = frames[frames["status"] == "final"].sort_values(["router", "start"])
    assert final[["router", "n_tuples"]].values.tolist() == [["r1", 2], ["r1", 1], ["r2", 3]]
    assert sorted(rejected["rejected"]) == ["malformed", "malformed"]
    assert any("not-a-time" in d for d in rejected["detail"])
    assert any("n/a" in d for d in rejected["detail"])


def test_cli_frames_stream_gives_the_batch_frames(spark, tmp_path):
    batch, _ = run_cli(tmp_path / "b")
    streamed, _ = run_cli(tmp_path / "s", "--stream", "--checkpoint", str(tmp_path / "ck"),
                          "--late", "0 seconds")
    # the stream has no end of input: r2's frame is closed by its 0.000 reading in both
    key = ["router", "frame_id", "status"]
    pd.testing.assert_frame_equal(
        streamed.sort_values(key).reset_index(drop=True)[key + ["n_tuples"]],
        batch[batch["status"] == "final"].sort_values(key).reset_index(drop=True)[
            key + ["n_tuples"]])


def test_cli_rejects_bad_parameters_with_a_clear_message(tmp_path, capsys):
    code = main(["frames", "--input", str(_csv(tmp_path)), "--time", "ts", "--when",
                 "loss_rate > 1", "--output", str(tmp_path / "o"), "--schedule", "soon"])
    assert code == 2
    assert "`--schedule` must be a positive duration" in capsys.readouterr().out


def test_cli_reads_standard_csv_quoting_issue16(spark, tmp_path):
    (tmp_path / "in.csv").write_text(
        'router,ts,loss_rate,note\n'
        'r1,2024-01-01 00:00:00,0.004,"plain"\n'
        'r1,2024-01-01 00:00:30,0.005,"a,""quoted"" note"\n'
        'r1,2024-01-01 00:01:00,0.001,x\n')
    out = tmp_path / "out"
    assert main(["frames", "--input", str(tmp_path / "in.csv"), "--time", "ts", "--by",
                 "router", "--when", "loss_rate > 0.003", "--output", str(out)]) == 0
    frames = pd.read_parquet(out / "frames")
    assert frames[["n_tuples", "status"]].values.tolist() == [[2, "final"]]
    assert len(pd.read_parquet(out / "rejected")) == 0  # the quoted row is not malformed


def test_cli_predicate_mistakes_are_one_line_with_spark_hint_issue16(spark, tmp_path, capsys):
    (tmp_path / "in.csv").write_text(CSV)
    base = ["frames", "--input", str(tmp_path / "in.csv"), "--time", "ts",
            "--output", str(tmp_path / "out")]
    assert main([*base, "--when", "los_rate > 0.003"]) == 2
    line = capsys.readouterr().out.strip()
    assert line.startswith("windowkit: error: `--when` 'los_rate > 0.003'")
    assert "did you mean 'loss_rate'" in line and "\n" not in line
    assert main([*base, "--when", "loss_rate >> 0.003"]) == 2  # a shift, not a comparison
    line = capsys.readouterr().out.strip()
    assert line.startswith("windowkit: error: `--when`") and "not a predicate" in line
    assert main([*base, "--when", "loss_rate > "]) == 2
    line = capsys.readouterr().out.strip()
    assert line.startswith("windowkit: error: `--when` 'loss_rate > '") and "\n" not in line


def test_cli_delta_frames_of_a_freezer_issue15(spark, tmp_path):
    # temp  -20 -19.5 -19 -18.1 -17.9 -17   a delta frame closes when max - min would reach 2
    #       [--------------------)          so the frames are the first four and the last two
    temps = [-20, -19.5, -19, -18.1, -17.9, -17]
    lines = ["freezer,ts,temp"] + [f"f1,2024-01-01 00:0{i}:00,{t}" for i, t in enumerate(temps)]
    (tmp_path / "in.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    assert main(["frames", "--kind", "delta", "--input", str(tmp_path / "in.csv"), "--time",
                 "ts", "--by", "freezer", "--value", "temp", "--x", "2",
                 "--output", str(out)]) == 0
    frames = pd.read_parquet(out / "frames").sort_values("start")
    assert frames["n_tuples"].tolist() == [4, 2]


def test_cli_frame_kinds_need_their_options(tmp_path, capsys):
    (tmp_path / "in.csv").write_text("t,v\n2024-01-01 00:00:00,1\n")
    base = ["frames", "--input", str(tmp_path / "in.csv"), "--time", "t",
            "--output", str(tmp_path / "o")]
    assert main([*base, "--kind", "boundary", "--value", "v"]) == 2
    assert "`--value` and `--x` are required" in capsys.readouterr().out
    assert main(base) == 2
    assert "`--when` is required" in capsys.readouterr().out


def test_cli_fill_counts_the_messages_around_each_frame_issue15(spark, tmp_path):
    # r1's one frame of 2+ rows, [00:00:30, 00:01:30), reaches back 30 s: [00:00:00, 00:01:30)
    # holds the messages at 00:00:05, 00:00:10, 00:01:00 and 00:01:29, not the one at its end
    frames = tmp_path / "run" / "out"
    assert main(["frames", "--input", str(_csv(tmp_path)), "--time", "ts", "--by", "router",
                 "--when", "loss_rate > 0.003", "--min-duration", "2 rows",
                 "--output", str(frames)]) == 0
    bgp = ["router,ts,kind"] + [f"r1,2024-01-01 00:{t},update" for t in
                                ("00:05", "00:10", "01:00", "01:29", "01:30")]
    (tmp_path / "bgp.csv").write_text("\n".join(bgp) + "\n")
    out = tmp_path / "filled"
    assert main(["fill", "--frames", str(frames / "frames"), "--input", str(tmp_path / "bgp.csv"),
                 "--time", "ts", "--by", "router", "--before", "30 seconds",
                 "--aggregate", "n=count(*)", "--output", str(out)]) == 0
    filled = pd.read_parquet(out / "filled")
    assert sorted(zip(filled["router"], filled["n"], strict=True)) == [("r1", 4), ("r2", 0)]


def _csv(tmp_path):
    (tmp_path / "readings.csv").write_text(CSV)
    return tmp_path / "readings.csv"


def test_cli_offers_extent_and_duplicates_to_every_kind_where_they_apply(tmp_path, capsys):
    # --extent reaches threshold frames too; --duplicates any/all is refused before Spark
    # starts where the values are not truth values
    from unittest import mock

    from windowkit.cli import build_parser
    from windowkit.cli.frames import _check_kind, _frames

    base = ["frames", "--input", str(_csv(tmp_path)), "--time", "ts", "--output",
            str(tmp_path / "o")]
    args = build_parser().parse_args([*base, "--when", "loss_rate > 1", "--extent", "liberal",
                                      "--duplicates", "any"])
    _check_kind(args)
    with mock.patch("windowkit.spark.threshold_frames") as threshold_frames:
        _frames("df", args)
    assert threshold_frames.call_args.kwargs["extent"] == "liberal"
    assert threshold_frames.call_args.kwargs["duplicates"] == "any"
    assert main([*base, "--kind", "delta", "--value", "loss_rate", "--x", "2", "--duplicates",
                 "all"]) == 2
    assert "`--duplicates` must be 'keep' for DeltaFraming" in capsys.readouterr().out
