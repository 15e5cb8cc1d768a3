"""``windowkit fill`` accounts for every filler row: rows it cannot place are written to
OUTPUT/rejected with the reason and the row, and counted."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from windowkit.cli import main

pytestmark = pytest.mark.spark


def test_cli_fill_writes_and_counts_the_rows_of_no_key_or_no_time(tmp_path, capsys):
    # one frame of r1, [00:01:00, 00:02:00), reaching back 30 s: [00:00:30, 00:02:00)
    t = pd.to_datetime(["2024-01-01 00:01:00", "2024-01-01 00:02:00", "2024-01-01 00:01:30"],
                       utc=True).astype("datetime64[us, UTC]")
    frames = pd.DataFrame({"router": ["r1"], "frame_id": [0], "start": t[:1], "end": t[1:2],
                           "last": t[2:], "status": ["final"]})
    (tmp_path / "frames").mkdir()
    frames.to_parquet(tmp_path / "frames" / "part-0.parquet", index=False)
    bgp = ["router,ts,kind", "r1,2024-01-01 00:00:40,a", "r1,2024-01-01 00:01:10,b",
           ",2024-01-01 00:01:20,no-key", "r1,,no-time", "r1,soon,bad-time"]
    (tmp_path / "bgp.csv").write_text("\n".join(bgp) + "\n")
    out = tmp_path / "filled"
    assert main(["fill", "--frames", str(tmp_path / "frames"), "--input",
                 str(tmp_path / "bgp.csv"), "--time", "ts", "--by", "router",
                 "--output", str(out)]) == 0
    assert sorted(pd.read_parquet(out / "filled")["kind"]) == ["a", "b"]
    rejected = pd.read_parquet(out / "rejected")
    assert rejected["rejected"].tolist() == ["malformed"] * 3
    assert sorted(json.loads(d)["kind"] for d in rejected["detail"]) == [
        "bad-time", "no-key", "no-time"]
    assert "2 filled rows; set aside: 3 malformed" in capsys.readouterr().err
