"""The default error parameters of windowkit's sketches, for the API and the command line.

A module of its own, importing nothing: the command line shows these defaults in its help
without importing the sketches (and numba) before a subcommand runs.

>>> DEFAULT_EPSILON, DEFAULT_DELTA, DEFAULT_PERSISTENCE_DELTA
(0.01, 0.25, 0.01)
"""

DEFAULT_EPSILON = 0.01
"""Windowed Count-Min's default relative error (``ceil(e / 0.01) = 272`` columns)."""
DEFAULT_DELTA = 0.25
"""Windowed Count-Min's default failure probability (``ceil(log2(1 / 0.25)) = 2`` rows)."""
DEFAULT_PERSISTENCE_DELTA = 0.01
"""Persistent items' default probability of missing a persistent item in a window:
``ceil(ln(1 / 0.01) / 2) = 3`` independent sketch instances, each missing it with probability
at most ``e**-2`` (about 0.135, which one instance alone would give)."""
