"""The Spark layer: DataFrame functions for batch and Structured Streaming."""

from windowkit.spark.frames import split_rejected, threshold_frames
from windowkit.spark.session import windowkit_session

__all__ = ["split_rejected", "threshold_frames", "windowkit_session"]
