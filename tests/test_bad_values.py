"""What happens to null, NaN, ±inf, unparsable and late values: one case per cell of the
README's table ("What happens to bad values")."""

from __future__ import annotations

import json
import math
import os

import pandas as pd
import pytest

pytestmark = pytest.mark.spark

NAN, INF = float("nan"), float("inf")
BAD = {"null": None, "nan": NAN, "inf": INF, "-inf": -INF}
LEVELS = [("4 seconds", "2 seconds"), ("8 seconds", "4 seconds")]


def rows_with(role: str, kind: str):
    """Eight rows ``n`` = 0..7 of key ``a`` at t = n s (v = 1.0, items alternating x, y), the
    row n = 4 holding the bad value in ``role``'s column; with its DDL and time unit."""
    rows = [["a", t, 1.0, "x" if t % 2 else "y", t] for t in range(8)]
    types = {"k": "string", "t": "long", "v": "double", "item": "string", "n": "long"}
    column = {"key": "k", "time": "t", "value": "v", "item": "item"}[role]
    i = list(types).index(column)
    if kind == "unparsable":
        types[column] = "string"
        for row in rows:
            row[i] = (f"2026-01-01 00:00:0{row[i]}" if role == "time" else str(row[i]))
        rows[4][i] = "not a time" if role == "time" else "n/a"
    else:
        if kind != "null" and role in ("key", "item"):
            types[column] = "double"
            for row in rows:
                row[i] = {"a": 1.0, "x": 1.0, "y": 2.0}[row[i]]
        rows[4][i] = BAD[kind]
    unit = None if types["t"] == "string" else "s"
    return [tuple(r) for r in rows], ", ".join(f"{c} {t}" for c, t in types.items()), unit


def threshold(df, unit):
    from windowkit.spark import threshold_frames

    return threshold_frames(df, "t", "v > 0", by="k", time_unit=unit)


def framing(name):
    def run(df, unit):
        import windowkit.spark as wk

        args = {"boundary": (2.0,), "delta": (5.0,), "aggregate": ("max", "<", 100.0)}[name]
        return getattr(wk, f"{name}_frames")(df, "t", "v", *args, by="k", time_unit=unit)

    return run


def multi_granular(df, unit):
    from windowkit.spark import multi_granular

    return multi_granular(df, "t", levels=LEVELS, by="k", value="v", time_unit=unit,
                          aggregates=["count", "sum"], distinct="item")


def recurring(df, unit):
    from windowkit.spark import recurring_items

    return recurring_items(df, "t", "item", levels=LEVELS, by="k", time_unit=unit)


def count_min(df, unit):
    from windowkit.spark import windowed_count_min

    return windowed_count_min(df, "item", "t", window=100, unit="ticks", tick="1 second",
                              algorithm="perfect", by="k", shards=2, time_unit=unit)


def persistent(df, unit):
    from windowkit.spark import persistent_items

    return persistent_items(df, "item", "t", slot="1 second", window_slots=4, alpha=0.5,
                            epsilon=0.25, time_unit=unit)


def exact_persistent(df, unit):
    from windowkit.spark import exact_persistent_items

    return exact_persistent_items(df, "item", "t", slot="1 second", window_slots=4,
                                  alpha=0.25, time_unit=unit)


def widen(df, unit):
    from pyspark.sql import functions as F

    from windowkit.spark import widen_detect

    # the paper's remote shell over the eight rows, a spare `dup` at n = 4 (whose call is
    # null when its item is)
    def step(*values):
        return F.element_at(F.array(*[F.lit(v) for v in values]), (F.col("n") + 1).cast("int"))

    call = step("accept", "dup", "dup", "open", "dup", "dup", "open", "execve")
    events = df.withColumns({"call": F.when(F.col("item").isNotNull(), call),
                             "fd": step("3", "4", "4", "4", "4", "4", "4", "4"),
                             "exe": F.lit("/bin/sh"),
                             "ret": step("4", "0", "1", "9", "2", "2", "9", "0")})
    return widen_detect(events, "t", by="k", base="1 second", max_length=8,
                        max_duration="16 seconds", time_unit=unit)


def reason_of(row) -> str | None:
    return row.get("rejected")


def frames_of(rows) -> list[tuple]:
    return sorted((r["start"], r["last"]) for r in rows)


def keys_of(rows, column) -> set:
    return {"NaN" if isinstance(r[column], float) and math.isnan(r[column]) else r[column]
            for r in rows}


# (function, role, kind, expectation): the README table, one case per cell
TECHNIQUES = {"threshold": threshold, "boundary": framing("boundary"),
              "delta": framing("delta"), "aggregate": framing("aggregate"),
              "multi_granular": multi_granular, "recurring": recurring, "count_min": count_min,
              "persistent": persistent, "exact_persistent": exact_persistent, "widen": widen}
CELLS = [
    *[(f, "time", kind, "malformed") for f in TECHNIQUES for kind in ("null", "unparsable")],
    *[(f, "key", "null", "malformed") for f in ("threshold", "boundary", "delta", "aggregate",
                                                 "multi_granular", "recurring", "widen")],
    *[(f, "key", kind, "key") for f in ("threshold", "boundary", "delta", "aggregate",
                                        "multi_granular", "recurring", "widen")
      for kind in ("nan", "inf", "-inf")],
    *[("threshold", "value", kind, "missing") for kind in ("null", "nan", "inf", "-inf")],
    ("threshold", "value", "unparsable", "missing and malformed"),
    *[(f, "value", kind, "missing") for f in ("boundary", "delta", "aggregate")
      for kind in ("null", "nan", "inf", "-inf", "unparsable")],
    *[("multi_granular", "value", kind, "malformed") for kind in BAD.keys() | {"unparsable"}],
    ("multi_granular", "item", "null", "not distinct"),
    *[("multi_granular", "item", kind, "counted") for kind in ("nan", "inf", "-inf")],
    *[(f, "item", "null", "malformed") for f in ("recurring", "count_min", "persistent",
                                                  "exact_persistent")],
    *[(f, "item", kind, "item") for f in ("recurring", "count_min", "persistent",
                                          "exact_persistent") for kind in ("nan", "inf", "-inf")],
    *[("count_min", "key", kind, "counted") for kind in BAD],
    ("widen", "item", "null", "no match"),
]


def expected_detail(spark, rows, ddl):
    from pyspark.sql import functions as F

    bad = spark.createDataFrame([rows[4]], ddl)
    return bad.select(F.to_json(F.struct(*bad.columns))).first()[0]


@pytest.mark.parametrize(("technique", "role", "kind", "expected"), CELLS,
                         ids=["-".join(c) for c in CELLS])
def test_each_cell_of_the_table(spark, technique, role, kind, expected):
    rows, ddl, unit = rows_with(role, kind)
    run = TECHNIQUES[technique]
    got = [r.asDict() for r in run(spark.createDataFrame(rows, ddl), unit).collect()]
    rejected = [(reason_of(r), r["detail"]) for r in got if reason_of(r)]
    results = [r for r in got if not reason_of(r)]
    if expected in ("malformed", "missing and malformed"):
        assert [reason for reason, _ in rejected] == ["malformed"]
        detail, row = json.loads(rejected[0][1]), json.loads(expected_detail(spark, rows, ddl))
        # widen's rows also hold the detector's columns this test derives
        assert detail == row if technique != "widen" else row.items() <= detail.items()
    else:
        assert rejected == []
    # the same rows with the bad row left out, and with a null in its place
    without = run(spark.createDataFrame(rows[:4] + rows[5:], ddl), unit).collect()
    if expected in ("missing", "missing and malformed"):
        # the missing value breaks the frame of the rows around it: [0, 3] and [5, 7]
        assert frames_of(results) == [(0, 3), (5, 7)]
    elif expected == "malformed":
        assert len(results) == len([r for r in without if not reason_of(r.asDict())])
    elif expected == "key" and technique == "widen":
        # the spare dup's key matches nothing on its own; key 1.0 still has its shell
        assert keys_of(results, "k") == {1.0}
    elif expected == "key":
        assert {"NaN" if kind == "nan" else BAD[kind], 1.0} <= keys_of(results, "k")
    elif technique == "count_min":  # an item, or a site: the row is counted
        assert sum(r["n_seen"] for r in results) == len(rows)
    elif expected == "item":
        names = {"nan": {"NaN"}, "inf": {INF, "Infinity"}, "-inf": {-INF, "-Infinity"}}[kind]
        assert names & keys_of(results, "item")
    elif expected in ("counted", "not distinct"):
        # as if the row held a new value (3.0, or z): the same counts and, for a value,
        # the same distinct counts; a null item is in no distinct count
        other = 3.0 if kind != "null" else "z"
        same = run(spark.createDataFrame([r if r[4] != 4 else (*r[:3], other, 4)
                                          for r in rows], ddl), unit).collect()
        results, same = (sorted(x, key=lambda r: (r["level"], r["window_end"]))
                         for x in (results, same))
        assert [r["count"] for r in results] == [r["count"] for r in same]
        distinct = [r["distinct_item"] for r in results]
        if expected == "counted":
            assert distinct == [r["distinct_item"] for r in same]
        else:
            assert distinct <= [r["distinct_item"] for r in same] and sum(distinct) < sum(
                r["distinct_item"] for r in same)
    elif expected == "no match":  # the shell is found without the row
        assert len(results) == 1 and 4 not in results[0]["times"]


@pytest.mark.parametrize("kind", ["nan", "inf", "-inf", "null"])
def test_widen_compares_nan_and_inf_in_detector_columns_as_text(spark, kind):
    # The remote shell, its dups' fd a bad double y, accept's ret the text Spark gives it:
    #   n    0       1    2    3     4    5    6     7
    #   call accept  dup  dup  open  dup  dup  open  execve
    #   fd   3.0     y    y    y     y    y    y     y
    #   ret  text(y) 0    1    9     2    2    9     0
    # NaN, inf and -inf are compared as their text ("NaN", "Infinity", "-Infinity"): the dups
    # match accept's ret, and the shell is found; a null matches no step: nothing is found.
    from pyspark.sql import functions as F

    from windowkit.spark import widen_detect

    y = BAD[kind]
    text = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity", "null": "NaN"}[kind]
    calls = ["accept", "dup", "dup", "open", "dup", "dup", "open", "execve"]
    rets = [text, "0", "1", "9", "2", "2", "9", "0"]
    rows = [("a", n, call, 3.0 if n == 0 else y, ret)
            for n, (call, ret) in enumerate(zip(calls, rets, strict=True))]
    events = spark.createDataFrame(rows, "k string, t long, call string, fd double, "
                                         "ret string").withColumn("exe", F.lit("/bin/sh"))
    found = widen_detect(events, "t", by="k", base="1 second", max_length=8,
                         max_duration="16 seconds", time_unit="s").collect()
    assert [reason_of(r.asDict()) for r in found] == [None] * len(found)
    assert len(found) == (0 if kind == "null" else 1)


def test_fill_frames_filler_rows_without_a_key_or_a_time_are_malformed(spark):
    from pyspark.sql import functions as F

    from windowkit.spark import fill_frames, split_rejected

    frames = spark.createDataFrame([("r1", 0, 100, 200, 150, "final")],
                                   "k string, frame_id long, start long, end long, last long, "
                                   "status string")
    data = spark.createDataFrame([("r1", 120, 1.0), (None, 130, 2.0), ("r1", None, 3.0),
                                  ("r1", 140, NAN)], "k string, t long, x double")
    filled, rejected = split_rejected(fill_frames(frames, data, "t", by="k", before="0 seconds",
                                                time_unit="s"))
    got = sorted((r["t"], r["x"]) for r in filled.collect())
    assert got[0] == (120, 1.0) and got[1][0] == 140 and math.isnan(got[1][1])
    assert len(got) == 2
    assert sorted((r["rejected"], r["detail"]) for r in rejected.collect()) == [
        ("malformed", '{"k":"r1","x":3.0}'), ("malformed", '{"t":130,"x":2.0}')]
    stamped = frames.select("k", "frame_id", *[F.timestamp_seconds(c).alias(c)
                                               for c in ("start", "end", "last")], "status")
    text = spark.createDataFrame([("r1", "1970-01-01 00:02:00"), ("r1", "not a time")],
                                 "k string, t string")
    filled, rejected = split_rejected(fill_frames(stamped, text, "t", by="k", before="0 seconds"))
    assert [r["t"] for r in filled.collect()] == ["1970-01-01 00:02:00"]
    assert [r["detail"] for r in rejected.collect()] == ['{"k":"r1","t":"not a time"}']


@pytest.mark.parametrize("technique", ["boundary", "recurring", "count_min"])
def test_a_row_behind_the_watermark_comes_out_late_with_its_json(spark, tmp_path, technique):
    """The late column for the techniques whose own tests do not stream a late row (threshold
    frames, multi-granular, widening and persistent items do: see the README)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    source = tmp_path / "in"
    source.mkdir()
    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    batches = [[("a", t0, 1.0, "x")], [("a", t0 + pd.Timedelta(minutes=30), 1.0, "y")],
               [("a", t0 + pd.Timedelta(minutes=1), 1.0, "x")]]  # the last row is late
    schema = pa.schema([("k", pa.string()), ("t", pa.timestamp("us", tz="UTC")),
                        ("v", pa.float64()), ("item", pa.string())])
    for i, rows in enumerate(batches):  # one file per micro-batch, in this order
        part = pd.DataFrame(rows, columns=["k", "t", "v", "item"])
        pq.write_table(pa.Table.from_pandas(part, schema=schema, preserve_index=False),
                       source / f"p{i}.parquet")
        os.utime(source / f"p{i}.parquet", (1_700_000_000 + i, 1_700_000_000 + i))
    stream = spark.readStream.schema(spark.read.parquet(str(source)).schema).option(
        "maxFilesPerTrigger", 1).parquet(str(source))
    import windowkit.spark as wk

    out = {"boundary": lambda: wk.boundary_frames(stream, "t", "v", 2.0, by="k",
                                                  late="1 minute"),
           "recurring": lambda: wk.recurring_items(stream, "t", "item", levels=LEVELS,
                                                   by="k", late="1 minute"),
           "count_min": lambda: wk.windowed_count_min(stream, "item", "t", window=10,
                                                      unit="ticks", tick="1 minute",
                                                      late="1 minute")}[technique]()
    name = f"late_{technique}"
    query = out.writeStream.format("memory").queryName(name).start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    got = [r.asDict() for r in spark.table(name).collect()]
    late_row = spark.read.parquet(str(source / "p2.parquet"))
    expected = late_row.select(F.to_json(F.struct(*late_row.columns))).first()[0]
    assert [(reason_of(r), r["detail"]) for r in got if reason_of(r)] == [("late", expected)]


def test_a_late_filler_row_of_a_stream_stream_fill_is_dropped_and_counted(spark, tmp_path):
    """fill_frames' late cell: Spark's join drops a filler row behind the watermark, and
    ``late_filler_rows`` counts it (the README says why it is not set aside with its JSON)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from windowkit.spark import fill_frames
    from windowkit.spark.fill import late_filler_rows

    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    s = pd.Timedelta(seconds=1)
    # micro-batch   frame [start, end)     filler row
    #   0           [0 s, 10 s)            5 s     -> filled
    #   1           [1000 s, 1010 s)       1005 s  -> filled; the watermark moves to 945 s
    #   2           [1500 s, 1510 s)       1505 s  -> filled (Spark's join drops rows behind
    #                                                 the watermark of the micro-batch before)
    #   3           [3000 s, 3010 s)       6 s     -> behind it: dropped, counted
    def frame(i, start):
        return [("a", i, t0 + start * s, t0 + (start + 10) * s, t0 + (start + 5) * s, "final")]

    frames = [frame(0, 0), frame(1, 1000), frame(2, 1500), frame(3, 3000)]
    filler = [[("a", t0 + 5 * s, 1)], [("a", t0 + 1005 * s, 2)], [("a", t0 + 1505 * s, 3)],
              [("a", t0 + 6 * s, 4)]]
    stamp = pa.timestamp("us", tz="UTC")
    schemas = {"frames": pa.schema([("k", pa.string()), ("frame_id", pa.int64()),
                                    ("start", stamp), ("end", stamp), ("last", stamp),
                                    ("status", pa.string())]),
               "filler": pa.schema([("k", pa.string()), ("t", stamp), ("x", pa.int64())])}
    streams = {}
    for name, batches in (("frames", frames), ("filler", filler)):
        folder = tmp_path / name
        folder.mkdir()
        for i, rows in enumerate(batches):  # one file per micro-batch, in this order
            table = pa.Table.from_pylist([dict(zip(schemas[name].names, r, strict=True))
                                          for r in rows], schema=schemas[name])
            pq.write_table(table, folder / f"p{i}.parquet")
            os.utime(folder / f"p{i}.parquet", (1_700_000_000 + i, 1_700_000_000 + i))
        streams[name] = spark.readStream.schema(spark.read.parquet(str(folder)).schema).option(
            "maxFilesPerTrigger", 1).parquet(str(folder))
    out = fill_frames(streams["frames"], streams["filler"], "t", by="k", before="0 seconds",
                      max_frame_length="1 minute", late="1 minute")
    query = out.writeStream.format("memory").queryName("late_filler").start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    got = sorted((r["frame_id"], r["x"], r["rejected"]) for r in spark.table("late_filler")
                 .collect())
    assert got == [(0, 1, None), (1, 2, None), (2, 3, None)]
    assert late_filler_rows(query) == 1
