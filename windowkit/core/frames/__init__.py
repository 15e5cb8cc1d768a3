"""Frames: data-driven windows (Grossniklaus et al.), one framing engine, one module per framing.

Every framer is a framing (:mod:`~windowkit.core.frames.framing`, the contract) run by the one
engine (``_engine``): ``threshold`` (maximal periods where a predicate holds), ``boundary``,
``delta``, ``aggregate`` and ``custom``. Names are re-exported here so that
``windowkit.core.frames.ThresholdFramer`` stays the public path (and the path older state bytes
name).
"""

from windowkit.core.frames._engine import (
    FRAME_STATUSES,
    OUTPUT_SCHEMA,
    VALUE,
    SequenceFrameSpec,
)
from windowkit.core.frames.aggregate import AggregateFramer, AggregateFraming
from windowkit.core.frames.boundary import BoundaryFramer, BoundaryFraming
from windowkit.core.frames.custom import CustomFramer, IncreasingTrend
from windowkit.core.frames.delta import DeltaFramer, DeltaFraming
from windowkit.core.frames.framing import DuplicatePolicy, Extent, Framing, MissingPolicy
from windowkit.core.frames.longest import longest_frames
from windowkit.core.frames.threshold import (
    ThresholdFramer,
    ThresholdFraming,
    predicate_codes,
    predicate_values,
)

__all__ = ["FRAME_STATUSES", "OUTPUT_SCHEMA", "VALUE", "DuplicatePolicy", "Extent", "MissingPolicy",
           "SequenceFrameSpec", "ThresholdFramer", "ThresholdFraming", "predicate_codes",
           "predicate_values"]
__all__ += ["AggregateFramer", "AggregateFraming", "BoundaryFramer", "BoundaryFraming",
            "CustomFramer", "DeltaFramer", "DeltaFraming", "Framing", "IncreasingTrend",
            "longest_frames"]
