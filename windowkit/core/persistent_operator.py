"""Old path of :mod:`windowkit.core.persistence.operator`, kept importable.

Streaming state bytes written before the move name the operator class by this module path
(``"windowkit.core.persistent_operator:PersistentItemsOperator"``), and
:class:`~windowkit.core.operator.EventTimeRunner` imports that path to restore them.
"""

from windowkit.core.persistence.operator import ITEM, PersistentItemsOperator

__all__ = ["ITEM", "PersistentItemsOperator"]
