"""Progressive window widening: did a known sequence of events happen, however slowly (a
pattern detector over windows of doubling duration)."""

from __future__ import annotations

from typing import Any

from windowkit.technique import KEYED, SqlSignature, StepFunction, Technique


def check_widening(params: dict[str, Any]) -> None:
    """What widen_detect refuses in its parameters, before Spark starts.

    Examples
    --------
    >>> check_widening({"detector": "no-such-episode"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...
    """
    from windowkit.core.widening.config import WideningConfig
    from windowkit.core.widening.episode_detector import EpisodeDetector

    WideningConfig.create(**{k: params[k] for k in ("base", "max_length", "max_duration",
                                                    "levels", "report") if k in params})
    EpisodeDetector(params.get("detector", "remote-shell"))


def report_example(run: Any) -> None:
    """Add the widening steps of the report's example run: remote shells in system calls, and
    a step whose result lacks widen_detect's columns (its section must say it could not be
    built)."""
    import windowkit.spark as W

    calls = run.tables["calls"]
    params = {"time": "time", "by": "key", "base": "4 seconds", "max_length": 16,
              "max_duration": "20 minutes"}
    run.add("remote shells", "widen_detect", params, {"input": ("calls", calls)},
            W.widen_detect(calls, late=None, **params), split=W.split_rejected,
            reason="rejected")
    run.add("broken", "widen_detect", {"time": "time"}, {"input": ("calls", calls)},
            calls.sparkSession.range(2))


TECHNIQUE = Technique(
    name="widening",
    question="did a known sequence of events happen, however slowly?",
    core=("windowkit.core.widening",),
    functions=(
        StepFunction("widen_detect", "widening", split="split_rejected", reason="rejected",
                     from_input=KEYED, columns=("time", "by"),
                     durations={"base": "time", "max_duration": "time", "late": "time"},
                     check=check_widening, needs=(("call", "matches system calls"),),
                     report="widening:widening_section",
                     sql=SqlSignature("widening:widen_operator", "widening:detector_inputs",
                                      "widening:detection_columns")),
    ),
    helpers={"split_detections": "widening"},
    cli=("windowkit.cli.widen",),
    report_example=report_example,
    example_functions=("widen_detect",),
)
