"""Old path of :mod:`windowkit.core.sketches.operator`, kept importable.

Streaming state bytes written before the move name the operator class by this module path
(``"windowkit.core.countmin_operator:WindowedCountMinOperator"``), and
:class:`~windowkit.core.operator.EventTimeRunner` imports that path to restore them.
"""

from windowkit.core.sketches.operator import ITEM, WindowedCountMinOperator, merge_snapshots

__all__ = ["ITEM", "WindowedCountMinOperator", "merge_snapshots"]
