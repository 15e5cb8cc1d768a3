"""Item, time and key parameters take a column name or a ``Column``, and ``by`` a list of them
(issue #36, point 2): persistent items, frame filling, Count-Min and the time outlier check.

Each Column is checked against an independent computation: the same function given the name
of a column that holds the expression's values (``F.col("x")`` against ``"x"``;
``F.lower("host")`` against a column computed beforehand and renamed as Spark names the
expression), and a composite key against one key column that encodes the pair
(``concat_ws``), split back.
"""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from tests.session_kinds import SECOND, T0, site_frames
from tests.test_spark_fill import run, write_files

pytestmark = pytest.mark.spark


def shifted(column: str):
    """``column`` plus a zero interval: the same times, as an expression."""
    return F.col(column) + F.expr("INTERVAL 0 SECONDS")


def rows_of(df, columns=None) -> list[tuple]:
    """A DataFrame's rows as sorted tuples, on the given columns."""
    rows = df.select(*(columns or df.columns)).collect()
    return sorted((tuple(r) for r in rows), key=lambda r: [(v is None, str(v)) for v in r])


def values_of(rejected) -> list[int]:
    """The ``v`` of each rejected row, from its detail."""
    return sorted(json.loads(r.detail)["v"] for r in rejected.collect())


@pytest.fixture(scope="module")
def visits(spark):
    """Hosts in mixed case (``lower(host)`` merges them), a small integer, and times."""
    rng = random.Random(3)
    hosts = ["Alpha", "alpha", "BETA", "beta", "gamma", "Delta"]
    rows = [(rng.choice(hosts), rng.randrange(4), T0 + rng.randrange(600) * SECOND)
            for _ in range(400)]
    rows += [(None, 1, T0), ("alpha", 2, None)]
    return spark.createDataFrame(rows, "host string, n int, t timestamp")


def persistent_calls():
    from windowkit.spark import exact_persistent_items, persistent_items

    return [
        lambda df, item, time: persistent_items(df, item, time, slot="20 seconds",
                                                window_slots=6, alpha=0.5, shards=2),
        lambda df, item, time: exact_persistent_items(df, item, time, slot="20 seconds",
                                                      window_slots=6, alpha=0.5),
    ]


@pytest.mark.parametrize("which", [0, 1], ids=["persistent_items", "exact_persistent_items"])
def test_persistent_items_take_the_item_and_the_time_as_columns(spark, visits, which):
    call = persistent_calls()[which]
    by_name = call(visits, "host", "t")
    assert rows_of(call(visits, F.col("host"), F.col("t"))) == rows_of(by_name)
    # an expression of the time: the same instants, the same windows
    assert rows_of(call(visits, "host", shifted("t"))) == rows_of(by_name)


@pytest.mark.parametrize("which", [0, 1], ids=["persistent_items", "exact_persistent_items"])
def test_a_computed_item_is_named_and_typed_as_spark_names_it(spark, visits, which):
    call = persistent_calls()[which]
    out = call(visits, F.lower("host"), "t")
    computed = visits.withColumn("h", F.lower("host"))
    expected = call(computed, "h", "t").withColumnRenamed("h", "lower(host)")
    assert out.columns == expected.columns
    assert out.schema["lower(host)"].dataType == T.StringType()
    # (a rejected row's detail is the input row: the computed one has one column more)
    assert rows_of(out.drop("detail")) == rows_of(expected.drop("detail"))
    assert len(rows_of(out)) > 5
    # an integer expression stays an integer item of its type
    out = call(visits, F.col("n") + 1, "t")
    expected = call(visits.withColumn("m", F.col("n") + 1), "m", "t").withColumnRenamed(
        "m", "(n + 1)")
    assert out.schema["(n + 1)"].dataType == T.IntegerType()
    assert rows_of(out.drop("detail")) == rows_of(expected.drop("detail"))


# --------------------------------------------------------------------------- fill_frames
@pytest.fixture(scope="module")
def sites(spark):
    """Frames of (site, router) pairs and their filler rows (see ``site_frames``)."""
    return site_frames(spark)


def paired(df):
    """``df`` keyed by one column encoding (site, router)."""
    return df.withColumn("pair", F.concat_ws("/", "site", F.col("router").cast("string")))


def split_back(out):
    """A fill keyed by ``pair``, with its key split back into site and router."""
    parts = F.split("pair", "/")
    return out.withColumns({"site": parts[0], "router": parts[1].cast("int")})


def test_fill_frames_takes_the_time_and_the_key_as_columns(spark, sites):
    from windowkit.spark import fill_frames

    frames, filler = sites
    by_name = fill_frames(frames, filler, "t", by="site", before="10 seconds")
    same = fill_frames(frames, filler, F.col("t"), by=F.col("site"), before="10 seconds")
    assert same.columns == by_name.columns
    assert rows_of(same) == rows_of(by_name)
    moved = fill_frames(frames, filler, shifted("t"), by="site", before="10 seconds")
    assert rows_of(moved) == rows_of(by_name)
    assert len(rows_of(by_name)) > 20


def test_a_computed_key_is_the_frames_column_of_its_name_else_their_own_expression(
        spark, sites):
    from windowkit.spark import fill_frames

    frames, filler = sites
    loud = filler.withColumn("site", F.upper("site"))
    expected = rows_of(fill_frames(frames, filler, "t", by="site"),
                       ["site", "frame_id", "t", "v"])
    # frames keyed by a column named as Spark names the expression (a frames function
    # keyed by F.lower("site") outputs that column)
    named = frames.withColumnRenamed("site", "lower(site)")
    out = fill_frames(named, loud, "t", by=F.lower("site"))
    assert rows_of(out, ["lower(site)", "frame_id", "t", "v"]) == expected
    assert "lower(site)" in out.columns and "site" in out.columns  # the filler's own
    # frames without such a column: the expression is evaluated on theirs
    upper_frames = frames.withColumn("site", F.upper("site"))
    out = fill_frames(upper_frames, loud, "t", by=F.lower("site"))
    got = rows_of(out, [F.lower("site"), "frame_id", "t", "v"])
    assert got == expected


@pytest.mark.parametrize("aggregates", [False, True], ids=["rows", "aggregates"])
def test_a_composite_key_fills_as_one_column_encoding_the_pair(spark, sites, aggregates):
    from windowkit.spark import fill_frames, split_rejected

    frames, filler = sites
    agg = {"n": F.count("v"), "total": F.sum("v")} if aggregates else None
    out = fill_frames(frames, filler, "t", by=["site", "router"], before="10 seconds",
                      aggregates=agg)
    one = fill_frames(paired(frames), paired(filler), "t", by="pair", before="10 seconds",
                      aggregates=agg)
    filled, rejected = split_rejected(out)
    one_filled, one_rejected = split_rejected(one)
    assert filled.schema["router"].dataType == T.IntegerType()
    columns = (["site", "router", "frame_id", "n", "total"] if aggregates
               else ["site", "router", "frame_id", "t", "v"])
    got = rows_of(filled, columns)
    assert got == rows_of(split_back(one_filled.drop("site", "router")), columns)
    assert len(got) == 12 if aggregates else len(got) > 15
    # a row of no router has no key: rejected, like a row of no time (concat_ws gave it one)
    assert values_of(rejected) == [-2, -1]
    assert values_of(one_rejected) == [-2]


def test_rejected_filler_rows_takes_a_composite_key(spark, sites):
    from windowkit.spark.fill import rejected_filler_rows

    _, filler = sites
    got = rejected_filler_rows(filler, F.col("t"), by=["site", F.col("router")])
    assert values_of(got) == [-2, -1]


@pytest.mark.slow
@pytest.mark.parametrize("filler_kind", ["table", "stream"])
def test_a_composite_key_fills_streaming_frames_as_the_batch(spark, sites, tmp_path,
                                                             filler_kind):
    from windowkit.spark import fill_frames, split_rejected

    frames, filler = sites
    batch = fill_frames(frames, filler, "t", by=["site", "router"], before="10 seconds")
    expected = rows_of(split_rejected(batch)[0], ["site", "router", "frame_id", "t", "v"])
    write_files(utc(frames).sort_values("last"), tmp_path / "frames", 3)
    f_stream = spark.readStream.schema(frames.schema).option("maxFilesPerTrigger", 1).parquet(
        str(tmp_path / "frames"))
    if filler_kind == "stream":
        good = filler.dropna()  # a stream's rejected rows are tested with one key elsewhere
        write_files(utc(good).sort_values("t"), tmp_path / "filler", 3)
        data = spark.readStream.schema(filler.schema).option("maxFilesPerTrigger", 1).parquet(
            str(tmp_path / "filler"))
    else:
        data = filler
    out = fill_frames(f_stream, data, "t", by=["site", "router"], before="10 seconds",
                      max_frame_length="2 hours", late="2 hours")
    run(out, tmp_path / "out", tmp_path / "ck")
    got = spark.read.parquet(str(tmp_path / "out"))
    assert rows_of(got.filter("rejected IS NULL"),
                   ["site", "router", "frame_id", "t", "v"]) == expected


def utc(df) -> pd.DataFrame:
    """``df`` in pandas, its times as instants (the session's time zone is UTC)."""
    frame = df.toPandas()
    return frame.assign(**{c: frame[c].dt.tz_localize("UTC") for c in frame.columns
                           if pd.api.types.is_datetime64_any_dtype(frame[c])})


def test_a_key_one_side_lacks_is_named_in_one_line(spark, sites):
    from windowkit.spark import fill_frames

    frames, filler = sites
    with pytest.raises(ValueError, match="`by` must be a column of both") as caught:
        fill_frames(frames.drop("router"), filler, "t", by=["site", "router"])
    message = str(caught.value)
    assert "\n" not in message
    assert "`frames` lacks 'router'" in message and "`data` lacks" not in message
    with pytest.raises(ValueError, match="`data` lacks 'router'") as caught:
        fill_frames(frames, filler.drop("router"), "t", by=["site", "router"])
    assert "`frames` lacks" not in str(caught.value)
    # an expression evaluated on frames that lack its columns
    lacks = r"`frames` lacks '\(router \+ 1\)' \(its columns"
    with pytest.raises(ValueError, match=lacks) as caught:
        fill_frames(frames.drop("router"), filler, "t", by=["site", F.col("router") + 1])
    assert "\n" not in str(caught.value)


def test_a_filler_time_named_like_a_frame_column_is_the_fillers(spark, sites):
    from windowkit.spark import fill_frames

    frames, filler = sites
    expected = fill_frames(frames, filler, "t", by="site")
    out = fill_frames(frames, filler.withColumnRenamed("t", "last"), "last", by="site")
    assert rows_of(out.withColumnRenamed("filler_last", "t").drop("detail")) == rows_of(
        expected.drop("detail"))


# ----------------------------------------------------------------------------- Count-Min
def test_count_min_sites_of_a_composite_key_hash_every_column(spark, visits):
    from windowkit.spark.countmin import count_min_sites

    df = visits.dropna()
    sites = count_min_sites(df, "host", "t", by=["host", "n"], shards=4,
                            unit="ticks").toPandas()
    per_pair = sites.groupby(["host", "n"])["shard"].nunique()
    assert (per_pair == 1).all()  # one site per (host, n)
    per_host = sites.groupby("host")["shard"].nunique()
    assert (per_host > 1).any()  # not the host's site alone: n is hashed too
    assert sites["shard"].nunique() == 4


def test_the_window_of_a_composite_site_key_is_the_window(spark, visits):
    from windowkit.spark import estimate_frequency, merge_count_min, windowed_count_min

    df = visits.dropna()
    items = df.select("host").distinct()

    def estimates(by):
        snaps = windowed_count_min(df, "host", "t", window=30, unit="ticks",
                                   tick="10 seconds", algorithm="perfect", by=by, shards=3)
        return rows_of(estimate_frequency(merge_count_min(snaps), items, "host"))

    assert estimates(["host", F.col("n")]) == estimates(None)


def test_estimates_and_heavy_hitters_take_the_item_as_a_column(spark, visits):
    from windowkit.spark import (
        estimate_frequency,
        heavy_hitters,
        merge_count_min,
        windowed_count_min,
    )

    df = visits.dropna().withColumn("h", F.lower("host"))
    snaps = windowed_count_min(df, "h", "t", window=60, unit="ticks", tick="10 seconds",
                               algorithm="perfect", shards=2)
    merged = merge_count_min(snaps)
    assert rows_of(estimate_frequency(merged, df, F.col("h"))) == rows_of(
        estimate_frequency(merged, df, "h"))
    # an expression of the items' columns: the estimate of its values, no column added
    out = estimate_frequency(merged, df, F.lower("host"))
    assert out.columns == [*df.columns, "estimate"]
    assert rows_of(out) == rows_of(estimate_frequency(merged, df, "h"))
    blob = merged.first()["sketch"]
    assert rows_of(estimate_frequency(blob, df, F.lower("host"))) == rows_of(out)

    hits = heavy_hitters(snaps, df, 0.1, item=F.lower("host"))
    expected = heavy_hitters(snaps, df, 0.1, item="h").withColumnRenamed("h", "lower(host)")
    assert hits.columns == expected.columns
    assert rows_of(hits) == rows_of(expected) and len(rows_of(hits)) > 3
    assert rows_of(heavy_hitters(snaps, df, 0.1, item=F.col("h"))) == rows_of(
        heavy_hitters(snaps, df, 0.1, item="h"))
    with pytest.raises(ValueError, match="`item` must be a column name when `candidates`"):
        heavy_hitters(snaps, ["alpha"], 0.1, item=F.col("h"))


# ------------------------------------------------------------------------- time outliers
def test_the_time_outlier_check_takes_the_time_as_a_column(spark):
    from windowkit.spark import check_time_outliers

    days = spark.range(3000).select((F.col("id") % 7 * 86400).alias("s"))
    df = days.union(spark.createDataFrame([(253402214400,)], "s long"))
    by_name = check_time_outliers(df, "s", "1 day", time_unit="s")
    found = check_time_outliers(df, F.col("s"), "1 day", time_unit="s")
    assert (found.newest, found.in_window, found.rows, found.column) == (
        by_name.newest, by_name.in_window, by_name.rows, "s")
    computed = check_time_outliers(df, F.timestamp_seconds("s"), "1 day")
    assert (computed.newest, computed.in_window, computed.rows) == (
        by_name.newest, by_name.in_window, by_name.rows)
    assert computed.column == "timestamp_seconds(s)"
    assert "`timestamp_seconds(s)`" in computed.message()


# ------------------------------------------------------------------------ "did you mean"
def typo_calls(spark, visits, sites):
    """Every function and column parameter of this brief, each given a typo: name -> call."""
    from windowkit.spark import (
        check_time_outliers,
        estimate_frequency,
        exact_persistent_items,
        fill_frames,
        heavy_hitters,
        merge_count_min,
        persistent_items,
        windowed_count_min,
    )
    from windowkit.spark.fill import rejected_filler_rows

    frames, filler = sites
    snaps = windowed_count_min(visits, "host", "t", window=10, shards=2)
    merged = merge_count_min(snaps)
    calls = {}
    for typo in ("hots", F.lower("hots")):
        kind = "name" if isinstance(typo, str) else "column"
        calls.update({
            f"persistent_items item {kind}": lambda t=typo: persistent_items(visits, t, "t"),
            f"exact_persistent_items item {kind}":
                lambda t=typo: exact_persistent_items(visits, t, "t"),
            f"windowed_count_min item {kind}":
                lambda t=typo: windowed_count_min(visits, t, "t", window=5),
            f"windowed_count_min by {kind}":
                lambda t=typo: windowed_count_min(visits, "host", "t", window=5, by=t),
            f"windowed_count_min by list {kind}":
                lambda t=typo: windowed_count_min(visits, "host", "t", window=5, by=["n", t]),
            f"estimate_frequency item {kind}":
                lambda t=typo: estimate_frequency(merged, visits, t),
            f"heavy_hitters item {kind}": lambda t=typo: heavy_hitters(snaps, visits, 0.1, t),
            f"fill_frames by {kind}": lambda t=typo: fill_frames(frames, filler, "t", by=t),
            f"rejected_filler_rows by {kind}":
                lambda t=typo: rejected_filler_rows(filler, "t", by=["site", t]),
        })
    for typo in ("tt", shifted("tt")):
        kind = "name" if isinstance(typo, str) else "column"
        calls.update({
            f"persistent_items time {kind}": lambda t=typo: persistent_items(visits, "host", t),
            f"exact_persistent_items time {kind}":
                lambda t=typo: exact_persistent_items(visits, "host", t),
            f"windowed_count_min time {kind}":
                lambda t=typo: windowed_count_min(visits, "host", t, window=5),
            f"windowed_count_min ticks time {kind}":
                lambda t=typo: windowed_count_min(visits, "host", t, window=5, unit="ticks",
                                                  tick="1 second"),
            f"fill_frames time {kind}": lambda t=typo: fill_frames(frames, filler, t),
            f"rejected_filler_rows time {kind}": lambda t=typo: rejected_filler_rows(filler, t),
            f"check_time_outliers time {kind}":
                lambda t=typo: check_time_outliers(visits, t, "1 minute"),
        })
    return calls


def test_a_typo_in_a_column_never_suggests_a_column_of_windowkits_own(spark, visits, sites):
    calls = typo_calls(spark, visits, sites)
    assert len(calls) == 32
    for name, call in calls.items():
        with pytest.raises(Exception) as caught:  # noqa: PT011 -- Spark's error or ours
            call()  # when called, not when a job runs
        text = str(caught.value)
        assert "wk_" not in text, (name, text[:500])
        assert "hots" in text or "tt" in text, (name, text[:500])
