"""The run report (issue #18, point 3): every function family's section, from small Spark runs.

Each step of :func:`example_run` runs a windowkit Spark function on a small generated data
set, its output written and read back as the pipeline runner does. The report's headline
numbers are checked against numbers this file computes itself from the same DataFrames (in
pandas, from the definitions: final frames, end - start, detected_at - first_time, the last
N items...), its rejected counts against the rows the functions set aside, and every image
is decoded as a PNG.
"""

from __future__ import annotations

import base64
import io
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from windowkit.report import RunSummary, StepRun, write_report
from windowkit.report.example import MARKUP, WITH_FIGURE, example_run

pytestmark = pytest.mark.spark



# ----------------------------------------------------------------------------- reading the page
class Page(HTMLParser):
    """Per step (``data-step``): headlines, rejected counts, images, caption, note, error."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: dict[str, dict] = {}
        self.images: list[dict] = []
        self.current: dict | None = None
        self.capture: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section" and "data-step" in a:
            self.current = {"function": a["data-function"], "headlines": {}, "rejected": {},
                            "images": [], "caption": "", "note": "", "error": ""}
            self.steps[a["data-step"]] = self.current
        elif tag == "tr" and "data-name" in a and self.current is not None:
            self.current["headlines"][a["data-name"]] = a["data-value"]
        elif tag == "tr" and "data-reason" in a and self.current is not None:
            self.current["rejected"][a["data-reason"]] = int(a["data-count"])
        elif tag == "img":
            self.images.append(a)
            if self.current is not None:
                self.current["images"].append(a)
        elif tag == "figcaption":
            self.capture = "caption"
        elif tag == "p" and a.get("class") in ("note", "error") and self.current is not None:
            self.capture = a["class"]

    def handle_endtag(self, tag):
        if tag == "section":
            self.current = None
        if tag in ("figcaption", "p"):
            self.capture = None

    def handle_data(self, data):
        if self.capture and self.current is not None:
            self.current[self.capture] += data


@pytest.fixture(scope="module")
def report(spark, tmp_path_factory):
    summary = example_run(spark)
    # tests/test_report_browser.py opens this page when it exists (else it writes its own)
    path = write_report(summary, str(tmp_path_factory.getbasetemp() / "example-report.html"))
    with open(path, encoding="utf-8") as handle:
        html = handle.read()
    page = Page()
    page.feed(html)
    return summary, path, html, page


def _step(summary: RunSummary, name: str) -> StepRun:
    return next(s for s in summary.steps if s.name == name)


def _value(page: Page, step: str, name: str) -> float:
    return float(page.steps[step]["headlines"][name])


def _micros(values: pd.Series) -> np.ndarray:
    if pd.api.types.is_integer_dtype(values):
        return values.to_numpy(dtype="int64")
    return pd.to_datetime(values).astype("datetime64[us]").astype("int64").to_numpy()


# ----------------------------------------------------------------------------- tests
def test_every_step_has_its_section_and_rows_out(report):
    summary, path, html, page = report
    assert path.endswith("example-report.html")
    assert list(page.steps) == [s.name for s in summary.steps]
    for step in summary.steps:
        seen = page.steps[step.name]
        assert seen["function"] == step.function
        assert int(seen["headlines"]["rows_out"]) == step.rows_out == step.result.count()
    for source in summary.sources:
        assert f'data-source="{source.name}"' in html
    assert "elapsed" in html and "12.5 s" in html


def test_sections_build_without_error_but_a_broken_result_is_reported(report):
    summary, _, _, page = report
    broken = {"broken"}
    for name, seen in page.steps.items():
        assert bool(seen["error"]) == (name in broken), (name, seen["error"])
    # the broken step (a result without widen_detect's columns) says so and keeps its counts
    assert "could not be built" in page.steps["broken"]["error"]
    assert page.steps["broken"]["headlines"] == {"rows_out": "2"}


def test_rejected_counts_per_step_with_zero_shown(report):
    summary, _, html, page = report
    for step in summary.steps:
        shown = page.steps[step.name]["rejected"]
        assert shown["malformed"] == step.rejected.get("malformed", 0)
        assert shown["late"] == step.rejected.get("late", 0)
        assert shown == {"malformed": 0, "late": 0, **step.rejected}
    # the two rows without a time were set aside by both frames steps on the routers
    assert page.steps[f"loss {MARKUP}"]["rejected"]["malformed"] == 2
    assert page.steps["drift"]["rejected"]["malformed"] == 2
    assert html.count(f"<code>{summary.rejected_path}</code>") == len(summary.steps) + 1


def test_every_image_is_a_decodable_png_with_alt_and_caption(report):
    from PIL import Image

    summary, _, _, page = report
    with_figure = [s for s in summary.steps if s.function in WITH_FIGURE and s.rows_out
                   and s.name != "broken"]
    assert len(page.images) == len(with_figure) == 10
    for img in page.images:
        assert img["src"].startswith("data:image/png;base64,")
        data = base64.b64decode(img["src"].split(",", 1)[1], validate=True)
        with Image.open(io.BytesIO(data)) as image:
            assert image.format == "PNG"
            image.load()  # decodes every pixel
            assert image.size[0] > 300 and image.size[1] > 100
        assert len(img["alt"]) > 20
    for seen in page.steps.values():
        assert (len(seen["images"]) == 1) == bool(seen["caption"].strip())


def test_markup_in_params_and_names_is_escaped(report):
    _, _, html, page = report
    assert MARKUP not in html
    assert "<b>" not in html
    assert "&lt;b&gt;x&lt;/b&gt; &amp;" in html
    assert f"loss {MARKUP}" in page.steps  # the parser unescapes it back


def test_frames_headlines(report):
    summary, _, _, page = report
    for name, unit in ((f"loss {MARKUP}", None), ("drift", "s")):
        frames = _step(summary, name).result.toPandas()
        final = frames[frames["status"] == "final"]
        key = "router"
        per = {"s": 1_000_000}.get(unit, 1)
        length = (_micros(final["end"]) - _micros(final["start"])) * per
        assert len(final) > 0
        assert _value(page, name, "frames") == len(final)
        assert _value(page, name, "keys") == final[key].nunique()
        assert _value(page, name, "total") == length.sum()
        assert abs(_value(page, name, "median") - np.median(length)) <= 1
        assert _value(page, name, "longest") == length.max()
        assert len(page.steps[name]["images"]) == 1


def test_empty_result_gets_a_note_and_zeros(report):
    _, _, _, page = report
    seen = page.steps["no frames"]
    assert seen["images"] == [] and "no rows" in seen["note"]
    assert seen["headlines"]["frames"] == "0" and seen["headlines"]["rows_out"] == "0"
    assert seen["headlines"]["longest"] == ""


def test_unknown_functions_get_rows_out_only(report):
    _, _, _, page = report
    for name in ("mystery",):
        seen = page.steps[name]
        assert list(seen["headlines"]) == ["rows_out"]
        assert seen["images"] == [] and "no figure" in seen["note"]


def test_fill_headlines(report):
    summary, _, _, page = report
    step = _step(summary, "loss with bgp")
    rows = step.result.toPandas()
    frames = step.inputs["input"].toPandas()
    final = frames[frames["status"] == "final"]
    filled = rows[["router", "frame_id"]].drop_duplicates()
    assert len(rows) > 0
    assert _value(page, step.name, "frames") == len(final)
    assert _value(page, step.name, "rows_attached") == len(rows)
    assert _value(page, step.name, "frames_filled") == len(filled)
    assert _value(page, step.name, "frames_empty") == len(final) - len(filled)


def test_multi_granular_and_recurring_headlines(report):
    summary, _, _, page = report
    reports = _step(summary, "traffic").result.toPandas()
    assert _value(page, "traffic", "levels") == 2 == reports["level"].nunique()
    assert _value(page, "traffic", "reports") == len(reports)
    assert _value(page, "traffic", "keys") == reports["source"].nunique()
    found = _step(summary, "recurring protocols").result.toPandas()
    assert len(found) > 0
    assert _value(page, "recurring protocols", "reports") == len(found)
    assert _value(page, "recurring protocols", "keys") == found["source"].nunique()
    assert _value(page, "recurring protocols", "items") == found["item"].nunique()


def test_count_min_headlines_against_the_last_window(report):
    from windowkit.spark import estimate_frequency, merge_count_min

    summary, _, _, page = report
    step = _step(summary, "busy sources")
    flows = step.inputs["input"].toPandas()
    last = flows[flows["seq"] > flows["seq"].max() - step.params["window"]]  # the last N items
    truth = last.groupby("source").size()
    merged = merge_count_min(step.result)
    items = step.inputs["input"].select("source").distinct()
    est = estimate_frequency(merged, items, "source").toPandas().set_index("source")["estimate"]
    over = est - truth.reindex(est.index, fill_value=0)
    assert (over >= 0).all()  # Perfect never underestimates
    assert _value(page, step.name, "items") == len(truth)
    assert _value(page, step.name, "max_overestimate") == over.max()
    assert _value(page, step.name, "window_count") == merged.first()["window_count"]
    # phi comes from the heavy_hitters step reading these snapshots
    hitters = _step(summary, "heavy sources").result.count()
    assert hitters > 0 and _value(page, step.name, "heavy_hitters") == hitters
    assert "φ = 0.04" in page.steps[step.name]["caption"]



def test_heavy_hitters_headlines(report):
    summary, _, _, page = report
    rows = _step(summary, "heavy sources").result.toPandas()
    latest = rows[rows["view"] == rows["view"].max()]
    assert len(latest) > 0
    assert _value(page, "heavy sources", "heavy_hitters") == latest["source"].nunique()
    assert _value(page, "heavy sources", "threshold") == pytest.approx(latest["threshold"].iloc[0])
    below = _value(page, "heavy sources", "below_threshold")
    assert 0 <= below <= len(latest)
    assert "estimate against its true count" in page.steps["heavy sources"]["caption"]


def test_persistent_headlines(report):
    summary, _, _, page = report
    for name in ("persistent sources", "persistent sources, exact"):
        rows = _step(summary, name).result.toPandas()
        assert len(rows) > 0
        assert _value(page, name, "items") == rows["source"].nunique()
        assert _value(page, name, "windows") == rows["window_end_slot"].nunique()
        assert _value(page, name, "reports") == len(rows)


def test_widening_headlines(report):
    summary, _, _, page = report
    found = _step(summary, "remote shells").result.toPandas()
    delay = _micros(found["detected_at"]) - _micros(found["first_time"])
    assert len(found) >= 4  # the four injected shells
    assert _value(page, "remote shells", "detections") == len(found)
    assert _value(page, "remote shells", "keys") == found["key"].nunique()
    assert abs(_value(page, "remote shells", "median_delay") - np.median(delay)) <= 1
    assert _value(page, "remote shells", "max_delay") == delay.max()


def test_import_is_cheap():
    code = ("import sys, windowkit.report; "
            "print([m for m in ('pyspark', 'matplotlib', 'jinja2') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"



def test_matplotlib_is_imported_while_the_sections_are_built_issue38():
    """The report imports matplotlib in the background as it starts building its sections,
    before any of them has a figure to draw (its import takes seconds of the driver)."""
    code = ("import sys, threading\n"
            "from windowkit.report import RunSummary, StepRun\n"
            "from windowkit.report import render, steps\n"
            "seen = []\n"
            "def section(step, summary=None):\n"
            "    seen.append(threading.enumerate())\n"
            "    return real(step, summary)\n"
            "real, steps.step_section = steps.step_section, section\n"
            "run = RunSummary('t', 'p.toml', 'local', 'batch',\n"
            "                 steps=[StepRun('s', 'merge_count_min', {}, {}, {}, None)])\n"
            "render.step_views(run)\n"
            "print(any(t.name == 'report-matplotlib' for t in seen[0]))\n"
            "for t in seen[0]:\n"
            "    if t.name == 'report-matplotlib': t.join()\n"
            "print(sys.modules['matplotlib'].get_backend().lower())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["True", "agg"]

@pytest.mark.parametrize("window", [{"unit": "ticks", "tick": "1 minute", "window": 45},
                                    {"window": 700}])
def test_last_window_counts_are_the_sketched_window(spark, window):
    """The report's true counts cover the window the step sketched: a Perfect sketch wide
    enough to have no collision estimates exactly them (ticks of event time, and samples
    ranked by event time)."""
    from windowkit.report.countmin import _steps, _with_last_step, last_window_counts
    from windowkit.spark import estimate_frequency, merge_count_min, windowed_count_min

    rng = np.random.default_rng(4)
    n = 3000
    seconds = np.sort(rng.uniform(0, 2 * 3600, n))
    t = pd.Timestamp("2024-01-01") + pd.to_timedelta(seconds, unit="s")
    df = spark.createDataFrame(pd.DataFrame({"item": rng.integers(0, 20, n),
                                             "time": t.astype("datetime64[us]")}))
    params = {"item": "item", "time": "time", "algorithm": "perfect", "epsilon": 0.001,
              **window}
    merged = merge_count_min(windowed_count_min(df, **params).filter("rejected IS NULL"))
    items = df.select("item").distinct()
    est = estimate_frequency(merged, items, "item").toPandas().set_index("item")["estimate"]
    truth = last_window_counts(df, params).toPandas().set_index("item")["true_count"]
    assert truth.sum() == merged.first()["window_count"] > 0
    # the section takes the last step from the latest snapshot, not from a scan of the input
    assert _with_last_step(merged, params).first()["wk_last"] == _steps(df, params)[1]
    pd.testing.assert_series_equal(truth.reindex(est.index, fill_value=0), est,
                                   check_names=False)


#: Spark jobs a step's section may run (Spark's adaptive execution runs a job per shuffle
#: stage); re-aggregating a result or an input job after job took up to 13.
MAX_SECTION_JOBS = 12
#: Functions whose result is one row per finding (a frame, a report, a detection): their
#: section reads it in one job, plus one for the input series under a figure.
ONE_ROW_PER_FINDING = ("threshold_frames", "persistent_items", "exact_persistent_items",
                       "widen_detect")


def test_each_section_runs_few_spark_jobs_issue38(spark, report):
    from windowkit.report import countmin
    from windowkit.report.steps import step_section

    summary = report[0]
    countmin._COUNTED.clear()  # counted once per run: count it in this one
    context = spark.sparkContext  # a test-only view of the jobs run (no Connect here)
    jobs = {}
    for step in summary.steps:
        group = f"report-jobs-{step.name}"
        context.setJobGroup(group, group)
        try:
            step_section(step, summary)
        finally:
            context.setJobGroup("", "")
        jobs[step.name] = len(context.statusTracker().getJobIdsForGroup(group))
    assert max(jobs.values()) <= MAX_SECTION_JOBS, jobs
    findings = {s.name: jobs[s.name] for s in summary.steps
                if s.function in ONE_ROW_PER_FINDING and s.result is not None}
    assert len(findings) >= 4 and max(findings.values()) <= 2, findings


@pytest.fixture
def refuse_fill_frames(monkeypatch):
    """A function that makes ``fill_frames`` refuse to run from then on: a report section
    that runs it again fails."""
    import functools

    import windowkit.spark as W
    from windowkit.spark import fill

    @functools.wraps(fill.fill_frames)
    def refuse(*args, **kwargs):
        msg = "the report ran fill_frames again"
        raise AssertionError(msg)

    def start() -> None:
        monkeypatch.setattr(W, "fill_frames", refuse)
        monkeypatch.setattr(fill, "fill_frames", refuse)

    return start


def test_fill_section_runs_no_technique_issue38(report, refuse_fill_frames):
    """The fill section reads what the run wrote (the frames, the rows attached to them):
    ``fill_frames`` refusing to run changes none of its numbers."""
    from windowkit.report.steps import step_section

    refuse_fill_frames()
    summary, _, _, page = report
    section = step_section(_step(summary, "loss with bgp"), summary)
    assert section.error == "" and section.figure is not None
    shown = {h.name: h.value for h in section.headlines}
    assert shown == {k: int(float(v)) for k, v in page.steps["loss with bgp"]["headlines"].items()}


def test_fill_section_of_aggregated_frames_runs_no_technique_issue38(spark, refuse_fill_frames):
    """A fill step with ``aggregates`` wrote one row per frame it filled (frames without rows
    too) and no count of rows: its section counts those frames and draws them, without running
    ``fill_frames`` again; a step that attached no row to any frame says so."""
    from pyspark.sql import functions as F

    from windowkit.report.steps import step_section
    from windowkit.spark import fill_frames, split_rejected

    frames = spark.createDataFrame(
        [("r1", 0, 100, 200, 190, "final"), ("r1", 1, 400, 500, 490, "final"),
         ("r1", 2, 700, None, 720, "partial"), ("r2", 0, 100, 300, 290, "final")],
        "router string, frame_id long, start long, end long, last long, status string")
    bgp = spark.createDataFrame([("r1", t) for t in (90, 120, 150, 650)]
                                + [("r2", t) for t in (110, 290)], "router string, t long")
    params = {"time": "t", "by": "router", "time_unit": "s", "before": "20 seconds"}
    filled, _ = split_rejected(fill_frames(frames, bgp, aggregates={"n": F.count("t")},
                                         **params))
    final = frames.filter("status = 'final'").count()
    counts = sorted(r["n"] for r in filled.collect())
    assert counts == [0, 2, 3]  # a frame without rows is there too
    stray = bgp.filter("t = 650")  # in no final frame
    none_attached, _ = split_rejected(fill_frames(frames, stray, **params))
    refuse_fill_frames()
    step = StepRun("bgp per frame", "fill_frames",
                   {**params, "aggregates": {"n": "count(t)"}},  # as a pipeline file gives it
                   {"input": frames, "data": bgp}, {"input": "loss", "data": "bgp"}, filled,
                   rows_out=len(counts))
    section = step_section(step)
    assert section.error == "" and section.figure is not None
    assert {h.name: h.value for h in section.headlines} == {"rows_out": 3, "frames": final}
    assert "r1" in section.figure.caption  # the key with the most frames
    # rows attached one by one, none of them in a frame: every frame counted, none filled
    empty = StepRun("bgp rows", "fill_frames", params, {"input": frames, "data": stray},
                    {"input": "loss", "data": "bgp"}, none_attached)
    section = step_section(empty)
    assert section.error == "" and section.figure is None and "no rows" in section.note
    assert {h.name: h.value for h in section.headlines} == {
        "rows_out": 0, "frames": final, "frames_filled": 0, "rows_attached": 0,
        "frames_empty": final}
