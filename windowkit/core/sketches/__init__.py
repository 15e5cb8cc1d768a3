"""Count-Min sketches: vanilla and the windowed variants of Rivetti, Busnel and Mostefaoui.

=======================  ==============================================================
:class:`CountMin`        vanilla Count-Min over the whole stream
:class:`PerfectWindowCM` exact expiry, stores the window (O(N) space)
:class:`SimpleWindowCM`  reset every N steps
:class:`ProportionalWindowCM`  subtract the previous window's average rate
:class:`SplitterWindowCM`  sub-cells tracking rate changes (tau, mu)
=======================  ==============================================================

Examples
--------
>>> from windowkit.core.sketches import PerfectWindowCM
>>> s = PerfectWindowCM.from_error(0.01, 0.25, window=1000)
>>> s.update(["x"] * 3)
>>> s.estimate(["x"]).tolist()
[3]
"""

from windowkit.core.sketches._window import WindowConfig, WindowedCountMin, WindowUnit
from windowkit.core.sketches.count_min import CountMin, CountMinConfig
from windowkit.core.sketches.perfect import PerfectWindowCM
from windowkit.core.sketches.proportional import ProportionalWindowCM
from windowkit.core.sketches.simple import SimpleWindowCM
from windowkit.core.sketches.splitter import SplitterConfig, SplitterWindowCM

__all__ = [
    "CountMin",
    "CountMinConfig",
    "PerfectWindowCM",
    "ProportionalWindowCM",
    "SimpleWindowCM",
    "SplitterConfig",
    "SplitterWindowCM",
    "WindowConfig",
    "WindowUnit",
    "WindowedCountMin",
]
