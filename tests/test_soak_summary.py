"""The soak bench's summary tells a drifting mix of shards written from a growing state."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


@pytest.fixture(scope="module")
def soak():
    """``bench/soak.py`` as a module (it imports its sibling ``state_scale``)."""
    sys.path.insert(0, BENCH)
    try:
        spec = importlib.util.spec_from_file_location("bench_soak", os.path.join(BENCH, "soak.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(BENCH)


def records(shards_written: list[int], shard_bytes: list[float]) -> list[dict]:
    """Files whose two micro-batches wrote ``shards_written[i]`` shards of ``shard_bytes[i]``."""
    return [{"file": i, "micro_batches": 2, "batch_s": 1.0,
             "state_written_bytes": int(n * size) // 2, "state_rows_updated": n}
            for i, (n, size) in enumerate(zip(shards_written, shard_bytes, strict=True))]


def test_drifting_mix_of_shards_moves_written_bytes_not_bytes_per_row(soak):
    # two shards per file early on, three later: the same state, written more often
    mix = [2] * 40 + [3] * 40
    summary = soak.summarize(records(mix, [5000.0] * len(mix)), settled=0, window=10)
    assert summary["state_written_bytes"]["max_ratio"] == pytest.approx(1.5)
    assert summary["state_bytes_per_row_written"]["max_ratio"] == pytest.approx(1.0)
    assert summary["state_bytes_per_row_written"]["level"] == pytest.approx(5000.0)


def test_growing_state_shows_in_bytes_per_row(soak):
    # each shard's state grows by a fifth over the run: keys ever seen, not live keys
    sizes = [5000.0 * (1 + 0.2 * i / 79) for i in range(80)]
    summary = soak.summarize(records([2, 3] * 40, sizes), settled=0, window=10)
    assert summary["state_bytes_per_row_written"]["last_ratio"] > 1.1
    assert summary["state_written_bytes"]["last_ratio"] > 1.1


def test_records_without_rows_updated_have_no_bytes_per_row(soak):
    # runs recorded before state_rows_updated existed keep their other curves
    old = [{"file": i, "batch_s": 1.0, "state_written_bytes": 100} for i in range(30)]
    summary = soak.summarize(old, settled=0, window=10)
    assert "state_bytes_per_row_written" not in summary
    assert summary["state_written_bytes"]["max_ratio"] == 1.0


def test_key_names_keep_one_width_across_a_run(soak, tmp_path):
    # the key numbers pass 10,000 during the run (file 24 on): names of mixed widths would
    # make the state's compressed bytes bump while shards hold both
    import pyarrow.parquet as pq

    folder = str(tmp_path / "in")
    soak.write_inputs(folder, batches=40, rows=500, keys=3000, seed=1)
    names = pq.read_table(folder, columns=["key"]).column("key").to_pylist()
    numbers = [int(name[1:]) for name in names]
    assert min(numbers) < 10_000 <= max(numbers)
    assert {len(name) for name in names} == {len(names[0])}
