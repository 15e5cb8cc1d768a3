"""``windowkit_windowed_count_min`` (issue #37): the SQL table function gives
``windowed_count_min``'s schema and snapshots (every site's sketch, cell for cell) on the same
table, for each way a row gets its position and its site; a mistake is one error at analysis.
And the rows a count-based window ranks at one time take a fixed order, so neither surface's
result depends on the input's order or partitioning."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.session_kinds import SQL_COUNT_MIN_CALLS, T0, sql_flows
from windowkit.spark.countmin.queries import RANGE_VIEWS

pytestmark = pytest.mark.spark

SECOND = pd.Timedelta(seconds=1)


@pytest.fixture(scope="module")
def registered(spark):
    from windowkit.spark import register_sql

    names = register_sql(spark)
    sql_flows(spark)
    return names


def snapshots(frame) -> pd.DataFrame:
    """The snapshot rows in an order of their values, each sketch as its configuration (the
    bytes before the cells) and its cells."""
    from windowkit.core.sketches import CountMin

    rows = frame.toPandas()
    cells = [None if b is None else np.asarray(CountMin.from_bytes(bytes(b)).counts)
             for b in rows["sketch"]]
    rows = rows.assign(sketch=[None if b is None else repr(CountMin.from_bytes(bytes(b)).config)
                               for b in rows["sketch"]], wk_cells=cells)
    order = rows.drop(columns="wk_cells").astype(str).sort_values(
        list(rows.columns[:-1]), kind="stable").index
    return rows.loc[order].reset_index(drop=True)


def same_snapshots(sql, frame) -> None:
    """The same schema, the same rows, and sketches equal cell for cell (Proportional's
    fractions up to float rounding: the DataFrame function sums its window blocks' parts in
    another order)."""
    assert sql.schema == frame.schema, (sql.schema, frame.schema)
    got, expected = snapshots(sql), snapshots(frame)
    assert len(expected) > 0 and expected["sketch"].notna().any()
    pd.testing.assert_frame_equal(got.drop(columns="wk_cells"),
                                  expected.drop(columns="wk_cells"))
    for mine, theirs in zip(got["wk_cells"], expected["wk_cells"], strict=True):
        assert (mine is None) == (theirs is None)
        if mine is not None:
            np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("call", sorted(SQL_COUNT_MIN_CALLS))
def test_windowed_count_min_gives_the_dataframe_functions_snapshots_issue37(spark, registered,
                                                                          call):
    """Positions from a sequence number, from the rank of a timestamp (with rows at one
    time, a row of no time and one of no item), ticks of time; sites round robin, by the hash
    of a column, of a composite key, of the tick; every algorithm; periodic snapshots."""
    from windowkit.spark import windowed_count_min

    query, params = SQL_COUNT_MIN_CALLS[call]
    same_snapshots(spark.sql(query), windowed_count_min(sql_flows(spark), **params))


def tied_rows(spark):
    """Items at a few times, many at each, in an order and a partitioning of their own; a row
    of no item among them."""
    rng = np.random.default_rng(5)
    rows = [(f"d{int(rng.integers(0, 6))}", T0 + int(rng.integers(0, 8)) * SECOND, i)
            for i in range(120)]
    return rows + [(None, T0 + 3 * SECOND, 999)]


def test_rows_at_one_time_are_ranked_alike_whatever_the_inputs_order_issue37(spark):
    """A count-based window over a timestamp cuts through the rows of one time: which of them
    it counts, and the site each goes to, must not depend on how the input was read."""
    from windowkit.spark import windowed_count_min

    rows = tied_rows(spark)
    schema = "dst string, time timestamp, n long"
    params = {"item": "dst", "time": "time", "window": 25, "shards": 3,
              "algorithm": "perfect"}
    found = []
    for order, parts in [(rows, 1), (rows[::-1], 4), (sorted(rows, key=lambda r: r[2] % 7), 3)]:
        df = spark.createDataFrame(order, schema).repartition(parts)
        found.append(snapshots(windowed_count_min(df, **params)))
    assert found[0]["sketch"].notna().sum() == 3
    for other in found[1:]:
        pd.testing.assert_frame_equal(other.drop(columns="wk_cells"),
                                      found[0].drop(columns="wk_cells"))
        for mine, theirs in zip(other["wk_cells"], found[0]["wk_cells"], strict=True):
            assert (mine is None) == (theirs is None)
            if mine is not None:
                np.testing.assert_array_equal(mine, theirs)


def test_ranked_positions_are_the_counted_rows_in_time_order_issue37(spark):
    """With a timestamp's ranks, the counted rows (a time and an item) take the positions
    0, 1, ... in time order, and no other row takes one."""
    from windowkit.spark.countmin import POSITION_MICROS, count_min_sites

    rows = tied_rows(spark) + [("d1", None, 1000)]
    df = spark.createDataFrame(rows, "dst string, time timestamp, n long").repartition(3)
    sites = count_min_sites(df, "dst", "time", shards=3).toPandas()
    counted = sites["dst"].notna() & sites["time"].notna()
    assert sites.loc[~counted, "position"].isna().all()
    ranked = sites[counted].sort_values("position")
    assert ranked["position"].tolist() == [POSITION_MICROS * i for i in range(counted.sum())]
    assert ranked["time"].is_monotonic_increasing
    assert (ranked["shard"] == np.arange(len(ranked)) % 3).all()


def test_rows_differing_only_in_where_their_nulls_are_hash_apart_issue37(spark):
    """Spark's hash skips a null: the order of rows at one time must not."""
    from windowkit.spark.columns import row_hash_sql

    df = spark.createDataFrame([("a", None), (None, "a"), (None, None)], "x string, y string")
    hashes = [r[0] for r in df.selectExpr(row_hash_sql(df.schema)).collect()]
    assert len(set(hashes)) == 3


def test_the_sql_call_ranks_rows_at_one_time_as_the_dataframe_function_issue37(spark,
                                                                             registered):
    from windowkit.spark import windowed_count_min

    df = spark.createDataFrame(tied_rows(spark)[::-1], "dst string, time timestamp, n long"
                               ).repartition(3)
    df.createOrReplaceTempView("tied")
    for algorithm in ("perfect", "splitter"):
        sql = spark.sql(f"""SELECT * FROM windowkit_windowed_count_min(TABLE(tied),
            item => 'dst', time => 'time', window => 25, shards => 3,
            algorithm => '{algorithm}', snapshot_every => 7)""")
        same_snapshots(sql, windowed_count_min(df, "dst", "time", window=25, shards=3,
                                               algorithm=algorithm, snapshot_every=7))


@pytest.mark.parametrize(("call", "message"), [
    ("item => 'dst', time => 'time', window => 0", "`window` must be an integer in [1, "),
    ("item => 'dst', time => 'time', window => 9, algorithm => 'fastest'", "`algorithm`"),
    ("item => 'dst', time => 'time', window => 9, unit => 'ticks'", "`tick` is required"),
    ("item => 'dest', time => 'time', window => 9",
     "`item` must name a column of the table (src, dst, time, bytes, bucket, seq); got 'dest'"),
    ("item => 'dst', window => 9", "`time` must name a column of the table"),
    ("item => 'dst', time => 'time', window => 9, by => 'router'",
     "`by` must name a column of the table"),
    ("item => 'dst', time => 'time', window => 9, windw => 3",
     "windowkit_windowed_count_min has no parameter `windw`"),
], ids=["window", "algorithm", "tick", "item", "time", "by", "unknown"])
def test_a_count_min_mistake_is_one_error_at_analysis_issue37(spark, registered, call, message):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException) as raised:
        _ = spark.sql(f"SELECT * FROM windowkit_windowed_count_min(TABLE(flows), {call})"
                      ).schema
    error = str(raised.value)
    last = [line for line in error.splitlines() if line.startswith("ValueError: ")]
    assert len(last) == 1 and message in last[0], error


def test_spark_xxhash64_in_python_is_sparks(spark):
    """The candidates' keys of ``windowkit_heavy_hitters``, computed in Python, are the keys
    Spark's ``xxhash64`` gives them (texts of every length around XXH64's 4-, 8- and 32-byte
    steps, non-ASCII ones, integers at the ends of a long)."""
    from pyspark.sql import functions as F

    from windowkit.core.hashing import spark_xxhash64

    rng = np.random.default_rng(3)
    texts = ["", "é", "日本", "a\x00b"] + ["".join(rng.choice(list("abcXYZ09é"), size=n))
                                          for n in range(80)]
    longs = [0, 1, -1, 2**63 - 1, -(2**63), *rng.integers(-(2**62), 2**62, size=40).tolist()]
    got_texts = spark.createDataFrame([(t,) for t in texts], "t string").select(
        "t", F.xxhash64("t").alias("h")).collect()
    got_longs = spark.createDataFrame([(v,) for v in longs], "v long").select(
        "v", F.xxhash64("v").alias("h")).collect()
    assert {r.t: r.h for r in got_texts} == {t: spark_xxhash64(t) for t in texts}
    assert {r.v: r.h for r in got_longs} == {v: spark_xxhash64(v) for v in longs}


def heavy_rows(frame) -> pd.DataFrame:
    """Heavy hitters in an order of their values; the window counts and thresholds apart
    (float sums, compared up to rounding)."""
    rows = frame.toPandas()
    order = rows.astype(str).sort_values(list(rows.columns), kind="stable").index
    return rows.loc[order].reset_index(drop=True)


def same_heavy_hitters(sql, frame) -> None:
    assert sql.schema == frame.schema, (sql.schema, frame.schema)
    got, expected = heavy_rows(sql), heavy_rows(frame)
    assert len(expected) > 0
    floats = ["window_count", "threshold"]
    pd.testing.assert_frame_equal(got.drop(columns=floats), expected.drop(columns=floats))
    np.testing.assert_allclose(got[floats].to_numpy(float), expected[floats].to_numpy(float),
                               rtol=1e-12)


#: Snapshot streams of ``flows`` the heavy hitters are tested on: one snapshot per site, a
#: time-based sketch snapshotting every row (more views than one replay range of the
#: DataFrame function holds), Splitter over the ranks of a time.
HEAVY_SNAPSHOTS = {
    "final": {"time": "seq", "window": 40, "algorithm": "perfect", "shards": 3},
    "ticks_every_row": {"time": "time", "window": 9, "unit": "ticks", "tick": "10 seconds",
                        "algorithm": "simple", "shards": 2, "snapshot_every": 1},
    "splitter": {"time": "time", "window": 50, "algorithm": "splitter",
                 "snapshot_every": 30},
}


@pytest.mark.parametrize("latest", [False, True])
@pytest.mark.parametrize("snapshots", sorted(HEAVY_SNAPSHOTS))
def test_heavy_hitters_gives_the_dataframe_functions_views_issue37(spark, registered,
                                                                 snapshots, latest):
    """Every view of the coordinator (or the final one), text candidates given as an array
    (and one of them never seen), over snapshots with rejected rows among them."""
    from windowkit.spark import heavy_hitters, windowed_count_min

    snaps = windowed_count_min(sql_flows(spark), "dst", **HEAVY_SNAPSHOTS[snapshots])
    snaps.createOrReplaceTempView("snaps")
    if snapshots == "ticks_every_row":
        assert snaps.filter("sketch IS NOT NULL").count() > RANGE_VIEWS
    candidates = [f"d{i}" for i in range(20)] + ["never"]
    listed = ", ".join(f"'{c}'" for c in candidates)
    sql = spark.sql(f"""SELECT * FROM windowkit_heavy_hitters(TABLE(snaps),
        candidates => array({listed}), phi => 0.1, item => 'dst', latest => {latest})""")
    same_heavy_hitters(sql, heavy_hitters(snaps, candidates, 0.1, "dst", latest=latest))


def test_heavy_hitters_of_integer_items_over_the_sql_snapshots_issue37(spark, registered):
    """Both steps in SQL, the snapshots a table function's rows; integer candidates, the
    output's item a long named by ``item``."""
    from windowkit.spark import heavy_hitters, windowed_count_min

    sql = spark.sql("""SELECT * FROM windowkit_heavy_hitters(
        TABLE(SELECT * FROM windowkit_windowed_count_min(TABLE(flows), item => 'bucket',
              time => 'time', window => 60, algorithm => 'perfect', snapshot_every => 20)),
        candidates => array(0, 1, -1, 7), phi => 0.3, item => 'b')""")
    snaps = windowed_count_min(sql_flows(spark), "bucket", "time", window=60,
                               algorithm="perfect", snapshot_every=20)
    same_heavy_hitters(sql, heavy_hitters(snaps, [0, 1, -1, 7], 0.3, "b"))


@pytest.mark.parametrize(("call", "message"), [
    ("TABLE(snaps), candidates => array('a'), phi => 0", "`phi` must be in (0, 1]"),
    ("TABLE(snaps), candidates => array(1.5, 2.5), phi => 0.1",
     "`candidates` must be an array of texts or of integers in SQL; got [1.5, 2.5]"),
    ("TABLE(snaps), candidates => 'd0', phi => 0.1",
     "`candidates` must be an array of texts or of integers in SQL; got 'd0'"),
    ("TABLE(snaps), phi => 0.1", "windowkit_heavy_hitters requires `candidates`"),
    ("TABLE(flows), candidates => array('a'), phi => 0.1",
     "`snapshots` must be windowed_count_min's output; the table lacks shard, n_seen, "
     "window_start, window_end, sketch"),
], ids=["phi", "float-candidates", "not-array", "no-candidates", "not-snapshots"])
def test_a_heavy_hitters_mistake_is_one_error_at_analysis_issue37(spark, registered, call,
                                                                  message):
    from pyspark.errors import AnalysisException

    from windowkit.spark import windowed_count_min

    windowed_count_min(sql_flows(spark), "dst", "seq", window=9).createOrReplaceTempView(
        "snaps")
    with pytest.raises(AnalysisException) as raised:
        _ = spark.sql(f"SELECT * FROM windowkit_heavy_hitters({call})").schema
    error = str(raised.value)
    last = [line for line in error.splitlines() if line.startswith("ValueError: ")]
    assert len(last) == 1 and message in last[0], error
