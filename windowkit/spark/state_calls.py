"""Many MapState reads, writes or removals at once, pipelined to the JVM.

Every call of pyspark's ``MapState`` is a synchronous round trip to the JVM's state server: the
request is written and flushed, then its answer awaited before the next request leaves. On this
2-core machine that costs 130-550 µs a call, mostly the two processes waking each other. The
server reads requests one after another from a socket, so requests can be written back to back
and their answers read afterwards, in order: 55-165 µs a call (measured with pyspark 4.1.1, 2,000
calls of 16 B to 10 kB values).

This goes through pyspark's private client (``_stateful_processor_api_client``), whose wire
format is pinned with the pyspark version windowkit requires. With any other pyspark, or a
``MapState`` that is not pyspark's (a test double), each call goes through the public API one
by one, with the same results.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

#: The pyspark whose private state client the pipelined path speaks to.
PIPELINED_PYSPARK = "4.1.1"
#: Requests in flight at once. Each request is small or has a small answer; 256 of them fit
#: the sockets' buffers, so neither side blocks writing while the other is not reading.
IN_FLIGHT = 256


def get_many(state: Any, keys: Sequence[tuple]) -> list[tuple | None]:
    """``state.getValue(key)`` for every key, in order.

    Parameters
    ----------
    state : pyspark.sql.streaming.stateful_processor.MapState
        The map.
    keys : sequence of tuple
        Keys of the map's key schema.

    Returns
    -------
    list
        The value tuple of each key, or None where the key has none.

    Examples
    --------
    >>> class Map(dict):
    ...     def getValue(self, key):
    ...         return self.get(key)
    >>> get_many(Map({(1,): (b"x",)}), [(1,), (2,)])
    [(b'x',), None]
    """
    client = _pipelined_client(state)
    if client is None:
        return [state.getValue(key) for key in keys]
    api, schema = client._stateful_processor_api_client, client.user_key_schema
    from pyspark.sql.streaming.proto import StateMessage_pb2 as sm

    def request(key: tuple) -> Any:
        return sm.MapStateCall(stateName=state._stateName,
                               getValue=sm.GetValue(userKey=api._serialize_to_bytes(schema, key)))

    answers = _pipelined(api, [request(key) for key in keys], "getting a map state value")
    return [tuple(api._deserialize_from_bytes(value)) if len(value) else None
            for value in answers]


def update_many(state: Any, items: Iterable[tuple[tuple, tuple]]) -> None:
    """``state.updateValue(key, value)`` for every ``(key, value)``, in order.

    Examples
    --------
    >>> class Map(dict):
    ...     def updateValue(self, key, value):
    ...         self[key] = value
    >>> m = Map()
    >>> update_many(m, [((1,), (b"x",)), ((2,), (b"y",))])
    >>> sorted(m)
    [(1,), (2,)]
    """
    client = _pipelined_client(state)
    if client is None:
        for key, value in items:
            state.updateValue(key, value)
        return
    api = client._stateful_processor_api_client
    from pyspark.sql.streaming.proto import StateMessage_pb2 as sm

    def request(key: tuple, value: tuple) -> Any:
        update = sm.UpdateValue(userKey=api._serialize_to_bytes(client.user_key_schema, key),
                                value=api._serialize_to_bytes(client.value_schema, value))
        return sm.MapStateCall(stateName=state._stateName, updateValue=update)

    _pipelined(api, [request(key, value) for key, value in items], "updating a map state value")


def remove_many(state: Any, keys: Iterable[tuple]) -> None:
    """``state.removeKey(key)`` for every key.

    Examples
    --------
    >>> class Map(dict):
    ...     def removeKey(self, key):
    ...         self.pop(key, None)
    >>> m = Map({(1,): (b"x",), (2,): (b"y",)})
    >>> remove_many(m, [(1,)])
    >>> sorted(m)
    [(2,)]
    """
    client = _pipelined_client(state)
    if client is None:
        for key in keys:
            state.removeKey(key)
        return
    api = client._stateful_processor_api_client
    from pyspark.sql.streaming.proto import StateMessage_pb2 as sm

    def request(key: tuple) -> Any:
        removal = sm.RemoveKey(userKey=api._serialize_to_bytes(client.user_key_schema, key))
        return sm.MapStateCall(stateName=state._stateName, removeKey=removal)

    _pipelined(api, [request(key) for key in keys], "removing a map state key")


def _pipelined_client(state: Any) -> Any:
    """pyspark's map state client behind ``state`` if the pipelined path can speak to it."""
    import pyspark

    client = getattr(state, "_mapStateClient", None)
    api = getattr(client, "_stateful_processor_api_client", None)
    if (pyspark.__version__ != PIPELINED_PYSPARK or api is None
            or not hasattr(api, "sockfile") or not hasattr(state, "_stateName")):
        return None
    return client


def _pipelined(api: Any, calls: list[Any], doing: str) -> list[bytes]:
    """Send ``calls`` (MapStateCall messages) ``IN_FLIGHT`` at a time; their answers' values."""
    from pyspark.errors import PySparkRuntimeError
    from pyspark.serializers import write_int
    from pyspark.sql.streaming.proto import StateMessage_pb2 as sm

    out = api.sockfile
    values: list[bytes] = []
    for lo in range(0, len(calls), IN_FLIGHT):
        group = calls[lo:lo + IN_FLIGHT]
        for call in group:
            message = sm.StateRequest(stateVariableRequest=sm.StateVariableRequest(
                mapStateCall=call)).SerializeToString()
            write_int(0, out)  # the message version, as pyspark's own client writes it
            write_int(len(message), out)
            out.write(message)
        out.flush()
        failure = None
        for _ in group:  # every answer is read, so the socket stays in step after an error
            status, error, value = api._receive_proto_message()
            if status != 0 and failure is None:
                failure = error
            values.append(value)
        if failure is not None:
            msg = f"Error {doing}: {failure}"
            raise PySparkRuntimeError(msg)
    return values
