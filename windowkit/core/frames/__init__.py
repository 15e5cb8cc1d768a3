"""Frames: data-driven windows (Grossniklaus et al.), one module per framing.

``threshold`` holds threshold frames (maximal periods where a predicate holds). Names are
re-exported here so that ``windowkit.core.frames.ThresholdFramer`` stays the public path (and
the path older state bytes name).
"""

from windowkit.core.frames.aggregate import AggregateFramer, AggregateFraming
from windowkit.core.frames.boundary import BoundaryFramer, BoundaryFraming
from windowkit.core.frames.custom import CustomFramer, Framing, IncreasingTrend, ThresholdFraming
from windowkit.core.frames.delta import DeltaFramer, DeltaFraming
from windowkit.core.frames.longest import longest_frames
from windowkit.core.frames.threshold import (
    OUTPUT_SCHEMA,
    VALUE,
    DuplicatePolicy,
    MissingPolicy,
    ThresholdFramer,
    ThresholdFrameSpec,
    predicate_codes,
)

__all__ = ["OUTPUT_SCHEMA", "VALUE", "DuplicatePolicy", "MissingPolicy", "ThresholdFrameSpec",
           "ThresholdFramer", "predicate_codes"]
__all__ += ["AggregateFramer", "AggregateFraming", "BoundaryFramer", "BoundaryFraming",
            "CustomFramer", "DeltaFramer", "DeltaFraming", "Framing", "IncreasingTrend",
            "ThresholdFraming", "longest_frames"]
