"""Frames: *when* did something hold, and what happened around it (threshold, boundary, delta,
aggregate and custom frames, the longest frame, and filling frames with another table's rows).

Filling is part of this technique rather than one of its own: it reads nothing but frames, and
its subcommand and section exist to show what happened around them.
"""

from __future__ import annotations

from typing import Any

from windowkit.technique import KEYED, SqlSignature, StepFunction, StreamExample, Technique

#: The functions whose output is frames (what longest_frame and fill_frames read).
FRAME_FUNCTIONS = ("threshold_frames", "boundary_frames", "delta_frames", "aggregate_frames",
                   "custom_frames")
_DURATIONS = {"min_duration": "time or rows", "fragment_every": "time or rows",
              "schedule": "time", "late": "time"}


def _framing(name: str, module: str = "framings", columns: tuple[str, ...] = ("time", "by",
                                                                           "value"),
             input_from: str | None = "value", **extra: Any) -> StepFunction:
    """A frames function's descriptor; ``input_from``: the parameter giving its framer's value
    in SQL (None: not a SQL table function)."""
    sql = None if input_from is None else SqlSignature(
        f"{module}:{name.removesuffix('_frames')}_operator", {"value": input_from},
        "frames:FRAME_COLUMNS")
    return StepFunction(name, module, split="split_rejected", reason="rejected", from_input=KEYED,
                        columns=columns, durations=_DURATIONS, report="frames:frames_section",
                        sql=sql, **extra)


def check_fill(params: dict[str, Any]) -> None:
    """What fill_frames refuses in its parameters, before Spark starts.

    Examples
    --------
    >>> check_fill({"statuses": ["final", "open"]})
    Traceback (most recent call last):
    ...
    ValueError: `statuses` holds frame statuses 'partial' and 'final'; got 'open'
    """
    statuses = params.get("statuses", ("final",))
    wrong = [s for s in statuses if s not in ("partial", "final")]
    if wrong:
        msg = f"`statuses` holds frame statuses 'partial' and 'final'; got {wrong[0]!r}"
        raise ValueError(msg)


def report_example(run: Any) -> None:
    """Add the frames steps of the report's example run (see
    :func:`windowkit.report.example.example_run`): threshold frames (with markup in the step's
    name and predicate), delta frames over an integer time, frames filled with BGP messages,
    and threshold frames where nothing holds."""
    from pyspark.sql import functions as F

    import windowkit.spark as W
    from windowkit.report.example import MARKUP

    routers, bgp = run.tables["routers"], run.tables["bgp"]
    framed = {"split": W.split_rejected, "reason": "rejected"}
    when = f"loss_rate > 0.003 AND router <> '{MARKUP.replace(chr(39), '')}'"
    loss = run.add(f"loss {MARKUP}", "threshold_frames",
                   {"when": when, "min_duration": "1 minute"}, {"input": ("routers", routers)},
                   W.threshold_frames(routers, "time", when, by="router",
                                      min_duration="1 minute", late=None),
                   inherited={"time": "time", "by": "router"}, **framed)
    seconds = routers.withColumn("t", F.unix_seconds("time")).drop("time")
    params = {"time": "t", "time_unit": "s", "by": "router", "value": "loss_rate", "x": 0.002}
    run.add("drift", "delta_frames", params, {"input": ("routers", seconds)},
            W.delta_frames(seconds, late=None, **params), **framed)

    params = {"time": "time", "by": "router", "before": "2 minutes", "after": "1 minute"}
    run.add("loss with bgp", "fill_frames", params,
            {"input": (loss.name, loss.result), "data": ("bgp", bgp)},
            W.fill_frames(loss.result, bgp, **params))

    # what threshold_frames gives when nothing holds, without running it again
    run.add("no frames", "threshold_frames", {"time": "time", "when": "loss_rate > 5",
                                              "by": "router"},
            {"input": ("routers", routers)}, loss.result.limit(0))


TECHNIQUE = Technique(
    name="frames",
    question="when did something hold, and what happened around it?",
    core=("windowkit.core.frames",),
    functions=(
        _framing("threshold_frames", "frames", columns=("time", "by"), predicates=("when",),
                 input_from="when"),
        _framing("boundary_frames"),
        _framing("delta_frames"),
        _framing("aggregate_frames"),
        # a Framing object has no SQL literal
        _framing("custom_frames", objects=("framing",), input_from=None),
        StepFunction("longest_frame", "framings", roles=(("frames", "input"),),
                     from_input={"by": ("input", "key")}, batch_only=True,
                     input_from=FRAME_FUNCTIONS),
        StepFunction("fill_frames", "fill", roles=(("frames", "input"), ("data", "data")),
                     split="split_rejected", reason="rejected",
                     from_input={"time": ("data", "time"), "by": ("data", "key"),
                                 "time_unit": ("data", "time_unit"),
                                 "late": ("data", "watermark")},
                     columns=("time", "by"), column_role="data", input_from=FRAME_FUNCTIONS,
                     durations={"before": "time or zero", "after": "time or zero",
                                "bucket": "time", "max_frame_length": "time", "late": "time"},
                     check=check_fill, expressions=("aggregates",),
                     report="fill:fill_section"),
    ),
    helpers={"split_filled": "fill"},
    cli=("windowkit.cli.frames", "windowkit.cli.fill"),
    report_example=report_example,
    example_functions=("threshold_frames", "delta_frames", "fill_frames"),
    stream_example=StreamExample(("frames", "--when", "loss_rate > 0.003", "--min-duration",
                                  "2 rows", "--fragment-every", "4 rows"),
                                 ("frames", "rejected")),
)
