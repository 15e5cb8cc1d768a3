"""Progressive window widening (Tolpin): a detector over sliding windows of doubling duration.

``WindowWidening`` is the operator; ``EpisodeDetector`` the exact matcher of episodes written
in a small text language (``parse_episode``); ``syscalls`` reads system-call traces (the paper's
line format and ``strace -f -tt`` output).
"""

from windowkit.core.widening.config import WideningConfig, levels_for, theorem2_bound
from windowkit.core.widening.detector import Detector, Match
from windowkit.core.widening.episode import REMOTE_SHELL, Episode, Step, Term, parse_episode
from windowkit.core.widening.episode_detector import EpisodeDetector, hash_values
from windowkit.core.widening.operator import OUTPUT_SCHEMA, WindowWidening

__all__ = ["OUTPUT_SCHEMA", "REMOTE_SHELL", "Detector", "Episode", "EpisodeDetector", "Match",
           "Step", "Term", "WideningConfig", "WindowWidening", "hash_values", "levels_for",
           "parse_episode", "theorem2_bound"]
