"""One output format: every subcommand writes Parquet folders, times as timestamps, by default,
and CSV folders with ``--output-format csv``; ``widen --format strace`` (a trace, no Spark)
included."""

from __future__ import annotations

import glob

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from windowkit.cli import main
from windowkit.datasets.syscalls import TRACE

CSV = "router,ts,loss_rate\n" + "".join(
    f"r{i % 2},2024-01-01 00:{i // 2:02d}:{30 * (i % 2):02d},{(i * 0.0013) % 0.01:.4f}\n"
    for i in range(40)) + "r1,not-a-time,0.009\n"
WINDOW = "RANGES 4 MINUTES, 2 MINUTES SLIDES 2 MINUTES, 1 MINUTE"

#: Each subcommand (the input comes after) -> its results folder and the time column in it
#: (None: its results hold no time).
COMMANDS = {
    "frames": (["frames", "--time", "ts", "--by", "router", "--when", "loss_rate > 0.003"],
               "frames", "start"),
    "multigranular": (["multigranular", "--time", "ts", "--by", "router", "--value",
                       "loss_rate", "--window", WINDOW], "reports", "window_end"),
    "persistent": (["persistent", "--item", "router", "--time", "ts", "--slot", "1 minute",
                    "--window-slots", "4", "--alpha", "0.5", "--epsilon", "0.25"],
                   "persistent", "window_end"),
    "countmin": (["countmin", "--item", "router", "--window", "10"], "estimates", None),
    "fill": (["fill", "--time", "ts", "--by", "router"], "filled", "start"),
    "widen": (["widen", "--format", "strace", "--base", "1 ms", "--max-length", "32",
               "--max-duration", "10 seconds"], "detections", "detected_at"),
}


def _run(tmp_path, command: str, output: str, *extra: str) -> None:
    args, _, _ = COMMANDS[command]
    if command == "widen":
        source = ["--input", str(TRACE)]
    else:
        readings = tmp_path / "readings.csv"
        readings.write_text(CSV)
        source = ["--input", str(readings), "--format", "csv"]
    if command == "fill":
        frames = tmp_path / "frames_run"
        if not frames.exists():
            _run(tmp_path, "frames", str(frames))
        source += ["--frames", str(frames / "frames")]
    assert main([*args, *source, "--output", output, *extra]) == 0


@pytest.mark.spark
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_writes_parquet_with_timestamps_or_csv_on_request(spark, tmp_path,
                                                                        command):
    _, results, time = COMMANDS[command]
    _run(tmp_path, command, str(tmp_path / "parquet"))
    for part in (results, "rejected"):
        table = pq.read_table(tmp_path / "parquet" / part)
        assert glob.glob(str(tmp_path / "parquet" / part / "*.parquet"))
        if part == results and time is not None:
            assert pa.types.is_timestamp(table.schema.field(time).type)
            assert table.num_rows > 0
    _run(tmp_path, command, str(tmp_path / "csv"), "--output-format", "csv")
    for part in (results, "rejected"):
        files = sorted(glob.glob(str(tmp_path / "csv" / part / "*.csv")))
        assert files and not glob.glob(str(tmp_path / "csv" / part / "*.parquet"))
        written = pd.concat([pd.read_csv(f) for f in files])
        assert list(written.columns) == pq.read_table(tmp_path / "parquet" / part).column_names
        if part == results and time is not None:
            parquet_times = pq.read_table(tmp_path / "parquet" / part).column(time).to_pandas()
            # CSV writes instants with their offset; Parquet's may come without a zone
            assert sorted(pd.to_datetime(written[time], utc=True)) == sorted(
                pd.to_datetime(parquet_times, utc=True))
