"""windowkit's registry of stateful classes and state plug-ins, found by name, never by module.

State bytes name the class that reads them: a stateful class by its ``FORMAT_TAG`` (the tag in
the bytes' header, :mod:`windowkit.core.serialization`), a plug-in stored inside a state (a
frames ``Framing``, a widening ``Detector``) by its registered name. Reading bytes looks the
name up here and nowhere else: no module named in bytes is ever imported, so bytes naming
anything that is not registered raise :class:`~windowkit.core.serialization.StateFormatError`.

windowkit's own classes register with :func:`register` when their module is imported; a lookup
first imports windowkit's own technique packages (:func:`own_modules`, named by the
techniques' descriptors), so that reading bytes never depends on what the caller happened to
import. A user's subclass of a
plug-in base registers itself when its class statement runs (``Framing`` and ``Detector`` call
:func:`register_plugin` from ``__init_subclass__``) under ``"<module>.<qualname>"``: its bytes
can be read in a process that has defined the class (a Spark worker unpickling the function
that holds it), never by importing anything.

Older windowkit wrote class paths ``"module:qualname"`` into bytes; :data:`OLD_PATHS` maps each
path it ever wrote for its own classes onto the registered name (:func:`name_of_old_path`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TypeVar

from windowkit.core.serialization import StateFormatError, state_tag

_T = TypeVar("_T", bound=type)

#: windowkit's own modules whose classes register and that belong to no technique (each
#: technique's descriptor names its own: :func:`windowkit.techniques.core_modules`).
SHARED_MODULES = ("windowkit.core.operator",)


def own_modules() -> tuple[str, ...]:
    """windowkit's packages and modules whose classes register; imported before any lookup.

    Examples
    --------
    >>> own_modules()[0], "windowkit.core.widening" in own_modules()
    ('windowkit.core.operator', True)
    """
    # the descriptors are plain data: reading them imports no technique and no Spark
    from windowkit.techniques import core_modules

    return (*SHARED_MODULES, *core_modules())


#: Class paths older windowkit wrote into state bytes, and the names that now read them.
OLD_PATHS = {
    "windowkit.core.operator:EventTimeRunner": "RUNNER",
    "windowkit.core.frames:ThresholdFramer": "THRFRAME",
    "windowkit.core.frames.threshold:ThresholdFramer": "THRFRAME",
    "windowkit.core.frames.delta:DeltaFramer": "DLTFRAME",
    "windowkit.core.frames.boundary:BoundaryFramer": "BNDFRAME",
    "windowkit.core.frames.aggregate:AggregateFramer": "AGGFRAME",
    "windowkit.core.frames.custom:CustomFramer": "CUSFRAME",
    "windowkit.core.frames.custom:IncreasingTrend": "IncreasingTrend",
    "windowkit.core.frames.custom:ThresholdFraming": "ThresholdFraming",
    "windowkit.core.frames.delta:DeltaFraming": "DeltaFraming",
    "windowkit.core.frames.boundary:BoundaryFraming": "BoundaryFraming",
    "windowkit.core.frames.aggregate:AggregateFraming": "AggregateFraming",
    "windowkit.core.multigranular.aggregator:MultiGranularAggregator": "MGRAGGR",
    "windowkit.core.multigranular.recurring:RecurringItems": "MGRRECUR",
    "windowkit.core.widening.operator:WindowWidening": "PWWIDEN",
    "windowkit.core.widening.episode_detector:EpisodeDetector": "EpisodeDetector",
    "windowkit.core.sketches.operator:WindowedCountMinOperator": "CMOPERAT",
    "windowkit.core.countmin_operator:WindowedCountMinOperator": "CMOPERAT",
    "windowkit.core.persistence.operator:PersistentItemsOperator": "PERSOPR",
    "windowkit.core.persistent_operator:PersistentItemsOperator": "PERSOPR",
}

_CLASSES: dict[str, type] = {}
_NAMES: dict[type, str] = {}
_OWN: set[str] = set()  # names of windowkit's own classes (the contract suite's scope)


def register(name: str | None = None) -> Callable[[_T], _T]:
    """Class decorator: register one of windowkit's classes under ``name`` (default: its
    ``FORMAT_TAG``).

    Parameters
    ----------
    name : str, optional
        The name state bytes carry.

    Returns
    -------
    callable
        The decorator (it returns the class unchanged).

    Raises
    ------
    ValueError
        If another class already holds the name.

    Examples
    --------
    >>> @register("DOCDEMO")
    ... class Demo:
    ...     pass
    >>> lookup("DOCDEMO", object, "class") is Demo, registered_name(Demo)
    (True, 'DOCDEMO')
    >>> _forget("DOCDEMO")
    """

    def decorate(cls: _T) -> _T:
        key = name if name is not None else cls.FORMAT_TAG
        _add(key, cls)
        _OWN.add(key)
        return cls

    return decorate


def register_plugin(cls: type) -> None:
    """Register a user's plug-in class under ``"<module>.<qualname>"`` (a class defined
    again under the same name, e.g. a notebook cell run twice, replaces the first).

    Parameters
    ----------
    cls : type
        The class.

    Examples
    --------
    >>> class Mine:
    ...     pass
    >>> register_plugin(Mine)
    >>> registered_name(Mine)
    'windowkit.core.registry.Mine'
    >>> _forget(registered_name(Mine))
    """
    key = f"{cls.__module__}.{cls.__qualname__}"
    if key in _OWN:
        return
    _CLASSES[key] = cls
    _NAMES[cls] = key


def _add(key: str, cls: type) -> None:
    held = _CLASSES.get(key)
    same = held is not None and (held.__module__, held.__qualname__) == (
        cls.__module__, cls.__qualname__)  # the same class, its module imported again
    if held is not None and held is not cls and not same:
        msg = f"`name` {key!r} is registered already, by {held.__qualname__}"
        raise ValueError(msg)
    _CLASSES[key] = cls
    _NAMES[cls] = key


def _forget(key: str) -> None:
    """Drop a name (doctests and tests that register classes of their own)."""
    cls = _CLASSES.pop(key, None)
    _OWN.discard(key)
    if cls is not None and _NAMES.get(cls) == key:
        del _NAMES[cls]


def registered_name(cls: type) -> str:
    """The name ``cls`` is registered under (what its state bytes carry).

    Parameters
    ----------
    cls : type
        A registered class.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If ``cls`` is not registered.

    Examples
    --------
    >>> from windowkit.core.frames import IncreasingTrend
    >>> registered_name(IncreasingTrend)
    'IncreasingTrend'
    """
    try:
        return _NAMES[cls]
    except KeyError:
        msg = (f"`cls` {cls.__qualname__} is not in windowkit's registry: its state could not "
               f"be read back")
        raise ValueError(msg) from None


def _load_own_modules() -> None:
    for module in own_modules():
        importlib.import_module(module)


def lookup(name: object, base: type, what: str) -> type:
    """The registered class named ``name``, which must be a subclass of ``base``.

    Parameters
    ----------
    name : str
        The name state bytes carry.
    base : type
        The class the caller reads (e.g. ``StreamOperator``, ``Framing``).
    what : str
        How to call it in an error (e.g. ``"operator"``).

    Returns
    -------
    type

    Raises
    ------
    StateFormatError
        If no class of that kind is registered under ``name``.

    Examples
    --------
    >>> from windowkit.core.operator import StreamOperator
    >>> lookup("MGRAGGR", StreamOperator, "operator").__name__
    'MultiGranularAggregator'
    >>> lookup("os:system", StreamOperator, "operator")
    Traceback (most recent call last):
    ...
    windowkit.core.serialization.StateFormatError: state names operator 'os:system', which \
is not in windowkit's registry
    """
    cls = _CLASSES.get(name) if isinstance(name, str) else None
    if cls is None and isinstance(name, str):
        _load_own_modules()
        cls = _CLASSES.get(name)
    if cls is None or not (isinstance(cls, type) and issubclass(cls, base)):
        msg = f"state names {what} {name!r}, which is not in windowkit's registry"
        raise StateFormatError(msg)
    return cls


def name_of_old_path(path: object) -> object:
    """The registry name older bytes meant by the class path ``"module:qualname"``.

    windowkit's own paths are listed in :data:`OLD_PATHS`; another ``"module:qualname"`` is
    read as a user's plug-in ``"module.qualname"`` (registered only if the process defined
    it). Anything else is returned as it is, for :func:`lookup` to refuse.

    Parameters
    ----------
    path : str
        What older bytes carry.

    Returns
    -------
    str

    Examples
    --------
    >>> name_of_old_path("windowkit.core.countmin_operator:WindowedCountMinOperator")
    'CMOPERAT'
    >>> name_of_old_path("my_framings:Falling")
    'my_framings.Falling'
    """
    if not isinstance(path, str):
        return path
    if path in OLD_PATHS:
        return OLD_PATHS[path]
    module, sep, qualname = path.partition(":")
    return f"{module}.{qualname}" if sep else path


def state_classes() -> dict[str, type]:
    """windowkit's own stateful classes (``to_bytes``/``from_bytes``) by format tag.

    Returns
    -------
    dict of str to type

    Examples
    --------
    >>> classes = state_classes()
    >>> classes["MGRRECUR"].__name__, "IncreasingTrend" in classes
    ('RecurringItems', False)
    """
    _load_own_modules()
    return {name: cls for name, cls in sorted(_CLASSES.items())
            if name in _OWN and callable(getattr(cls, "from_bytes", None))}


def load_state(blob: bytes | memoryview, base: type = object) -> object:
    """Rebuild whatever stateful object ``blob`` holds, by the format tag in its header.

    Parameters
    ----------
    blob : bytes
        Bytes of a registered class's ``to_bytes``.
    base : type, default object
        The class the object must be an instance of.

    Returns
    -------
    object

    Raises
    ------
    StateFormatError
        If the bytes are not state, or hold a class that is not registered.

    Examples
    --------
    >>> from windowkit.core.sketches import CountMin
    >>> load_state(CountMin(2, 8).to_bytes()).width
    8
    """
    cls = lookup(state_tag(blob), base, "class")
    return cls.from_bytes(blob)
