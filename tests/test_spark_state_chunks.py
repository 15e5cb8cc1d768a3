"""Chunked streaming state on Spark (issue #17): with more keys than a shard keeps in one value,
a stream's frames are still exactly the core's, across micro-batches and a restart on the
checkpoint, through pyspark's real state server (pipelined MapState calls included)."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pandas as pd
import pytest

from tests.test_spark_frames import core_frames, order_files, run_stream
from windowkit.spark import chunk_store

pytestmark = pytest.mark.spark


def many_keys_files(folder: str, keys: int, seed: int) -> pd.DataFrame:
    """File 0: one reading of every key in the first 5 minutes, above the threshold (a frame
    opens that absent reports do not close: the key stays in the state); files 1-3: 30 s
    reports of 60 keys from minute 10 on (file 1 moves the watermark past file 0), some of
    them above the threshold; then a 0-reading of every key far later, and a row later still
    that moves the watermark past it. Returns every row written."""
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    routers = np.array([f"r{k:05d}" for k in range(keys)], dtype=object)
    pieces = [pd.DataFrame({"router": routers, "time": t0 + pd.to_timedelta(
        rng.integers(0, 300, keys), unit="s"), "loss_rate": 0.004 + rng.random(keys) * 0.002})]
    hot = rng.choice(routers, 60, replace=False)
    for b in range(1, 4):
        times = t0 + pd.Timedelta(minutes=10 * b) + pd.to_timedelta(np.arange(12) * 30, "s")
        rows = pd.DataFrame({"router": np.repeat(hot, 12), "time": np.tile(times, 60),
                             "loss_rate": rng.random(720) * 0.006})
        pieces.append(rows)
    far = t0 + pd.Timedelta(hours=3)
    pieces.append(pd.DataFrame({"router": routers, "time": far, "loss_rate": 0.0}))
    pieces.append(pd.DataFrame({"router": routers[:1], "time": [far + pd.Timedelta(hours=1)],
                                "loss_rate": [0.0]}))
    os.makedirs(folder)
    for i, piece in enumerate(pieces):
        path = os.path.join(folder, f"part-{i:03d}.parquet")
        piece.astype({"time": "datetime64[us, UTC]"}).to_parquet(path, index=False)
        order_files(path, i)
    return pd.concat(pieces[:-1], ignore_index=True)


def test_a_stream_with_chunked_state_gives_the_core_frames_across_a_restart(spark, tmp_path):
    keys = 3 * chunk_store.SPLIT_AT  # 2 shards: each splits its keys into chunks
    fed = many_keys_files(str(tmp_path / "all"), keys, seed=5)
    files = sorted(os.listdir(tmp_path / "all"))
    source = tmp_path / "in"
    os.makedirs(source)
    for name in files[:2]:  # every key, then one micro-batch of a few keys; then a restart
        shutil.copy2(tmp_path / "all" / name, source / name)
    run_stream(spark, str(source), str(tmp_path / "out"), str(tmp_path / "ck"))
    # the keys did go to chunks: Spark's state reader sees the MapState's entries
    # (both shards split; the first micro-batch touched every key, so few chunks suit them)
    per_shard = chunks_of(spark, tmp_path / "ck").groupBy("key").count().toPandas()["count"]
    assert len(per_shard) == 2 and (per_shard >= chunk_store.MIN_CHUNKS).all()
    for name in files[2:]:
        shutil.copy2(tmp_path / "all" / name, source / name)
    run_stream(spark, str(source), str(tmp_path / "out"), str(tmp_path / "ck"))
    got = spark.read.parquet(str(tmp_path / "out")).toPandas()
    assert (got["rejected"] != "late").all()
    expected = core_frames(fed, finish=False, min_duration="3 rows", schedule="30 seconds",
                           missing="satisfying", fragment_every="10 rows")
    assert len(expected) > 100
    from tests.test_spark_frames import canonical
    pd.testing.assert_frame_equal(canonical(got), expected)
    # the far 0-readings closed every frame, and the watermark passed them: no key owes
    # anything, and none is left in the chunks (issue #39)
    assert chunks_of(spark, tmp_path / "ck").count() == 0


def chunks_of(spark, checkpoint):
    """The entries of the ``wk_chunks`` MapState at the checkpoint's last micro-batch."""
    return (spark.read.format("statestore").option("stateVarName", "wk_chunks")
            .load(str(checkpoint)))
