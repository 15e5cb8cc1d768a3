"""Spark's Python daemon, starting its workers with what windowkit's tasks import.

PySpark's daemon (one per executor and set of worker environment variables; windowkit's
session gives every kind of worker the same ones) forks a Python worker per task slot, and
each new worker imported pandas, pyarrow, PySpark's Arrow serializers and windowkit with numba
before its first row. The PySpark modules came from the ``pyspark.zip`` Spark puts first on a
worker's path, which holds no bytecode, so every new process compiled them again (0.5 s of the
0.8 s it took to import them). This daemon imports PySpark from the installed package instead
(same code: the zip is a file inside it), drops Spark's core jar from the path (no Python in
it, but 5,000 entries listed by every search for package metadata), imports the rest and sets
numba up once, before forking, so that every worker starts with them. Measured on the
multi-granular streaming benchmark's query (10 files of 1 M rows, ``local[2]``): first
micro-batch 8.9 -> 8.2 s, whole query 25.5 -> 24.5 s with the imports; then each stateful
worker's first call of the processor 0.70 -> 0.37-0.41 s with the jar gone and numba set up
(0.40 s of it had gone to numba's set-up).

A worker also acknowledges what it reads from the JVM at once (:func:`acknowledge_reads_at_once`):
with Linux's delayed acknowledgements each task waited up to 40 ms for its own input.

:func:`windowkit.spark.windowkit_session` uses it in local mode only (an executor elsewhere
may lack windowkit, or have another PySpark). Best effort: a module that cannot be imported
here is imported by the worker that needs it, as before.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import io
import os
import socket
import types

from windowkit.worker_path import prefer_installed_pyspark

PRELOADED = (
    "pandas",
    "pyarrow",
    "pyspark.worker",
    "pyspark.sql.pandas.serializers",
    "pyspark.sql.pandas.types",
    "pyspark.sql.streaming.stateful_processor",
    "pyspark.sql.streaming.stateful_processor_api_client",
    "windowkit.spark.adapter",
)


def preload(modules: tuple[str, ...] = PRELOADED) -> list[str]:
    """Import ``modules``; return those that could not be imported.

    Examples
    --------
    >>> preload(("json", "no_such_module_here"))
    ['no_such_module_here']
    """
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a worker imports what it needs itself
            missing.append(name)
    return missing


def warm_numba() -> bool:
    """Run one of windowkit's cached numba kernels, so that numba's own set-up is done.

    A process's first call of any numba function sets up numba's typing and code-generation
    contexts (0.2 s, importing and registering its implementations); done here, before the
    daemon forks, it is done once instead of in every worker's first task. A worker still
    loads each kernel it uses from numba's cache (25-30 ms each here). Returns whether it
    ran.

    Examples
    --------
    >>> warm_numba()
    True
    """
    try:
        import numpy as np

        from windowkit.core.frames._engine import _strictly_ordered

        one = np.zeros(1, dtype=np.int64)
        _strictly_ordered(one, one)
    except Exception:  # noqa: BLE001 - a worker sets numba up itself, as before
        return False
    return True


class AcknowledgedReads(io.RawIOBase):
    """The reading end of a TCP socket that acknowledges each read at once.

    The JVM sends a task to its Python worker in several writes, and over loopback TCP each
    write after the first waited for the worker to acknowledge the one before, which Linux
    delays by up to 40 ms: a one-row ``mapInArrow`` job took 158-183 ms, 109-126 ms with this
    reader, and 10 M rows through a worker no longer (``local[2]``, medians of 60 and 9 jobs).
    ``TCP_QUICKACK`` is the switch, but Linux turns it off again as it goes, so it is set
    before every read (one system call per buffer of input, 64 KB by default).

    Parameters
    ----------
    sock : socket.socket
        A connected TCP socket; the reader owns it and closes it.

    Examples
    --------
    >>> import socket
    >>> listener = socket.create_server(("127.0.0.1", 0))
    >>> sender = socket.create_connection(listener.getsockname())
    >>> reader = io.BufferedReader(AcknowledgedReads(listener.accept()[0]))
    >>> sender.sendall(b"task"); sender.close(); listener.close()
    >>> reader.read()
    b'task'
    >>> reader.close()
    """

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._sock.fileno()

    def readinto(self, buffer) -> int:
        _acknowledge_at_once(self._sock)
        return self._sock.recv_into(buffer)

    def close(self) -> None:
        if not self.closed:
            self._sock.close()
        super().close()


def acknowledging_reader(fd: int, buffering: int = -1) -> io.BufferedReader | None:
    """A buffered :class:`AcknowledgedReads` over ``fd``, or None where ``fd`` is not a TCP
    socket (a pipe, a Unix socket) or the system has no ``TCP_QUICKACK``; ``fd`` is then
    left as it was.

    Examples
    --------
    >>> read_end, write_end = os.pipe()
    >>> acknowledging_reader(read_end) is None
    True
    >>> os.close(read_end); os.close(write_end)
    """
    if not hasattr(socket, "TCP_QUICKACK"):
        return None
    try:
        sock = socket.socket(fileno=fd)
    except OSError:  # not a socket
        return None
    try:
        _acknowledge_at_once(sock)
    except OSError:  # a socket, but not TCP
        sock.detach()
        return None
    size = buffering if buffering > 0 else io.DEFAULT_BUFFER_SIZE
    return io.BufferedReader(AcknowledgedReads(sock), size)


def _acknowledge_at_once(sock: socket.socket) -> None:
    """Switch ``sock`` to quick acknowledgement; Linux leaves that mode again on its own."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)


class _AcknowledgingOs:
    """``os`` as PySpark's daemon sees it: its ``fdopen`` gives a worker's socket an
    :class:`AcknowledgedReads` reading end; everything else is ``os`` itself."""

    def __getattr__(self, name: str):
        return getattr(os, name)

    @staticmethod
    def fdopen(fd: int, mode: str = "r", buffering: int = -1, *args, **kwargs):
        reader = acknowledging_reader(fd, buffering) if mode == "rb" else None
        return reader if reader is not None else os.fdopen(fd, mode, buffering, *args, **kwargs)


def acknowledge_reads_at_once(daemon: types.ModuleType) -> None:
    """Make the workers of PySpark's daemon module ``daemon`` read their TCP socket through
    :class:`AcknowledgedReads`.

    The daemon opens a worker's socket with ``os.fdopen`` (and its own standard input, a pipe,
    which stays as it was); only that module's view of ``os`` changes.

    Examples
    --------
    >>> import types
    >>> daemon = types.ModuleType("daemon"); daemon.os = os
    >>> acknowledge_reads_at_once(daemon)
    >>> daemon.os.getpid() == os.getpid(), daemon.os.fdopen is os.fdopen
    (True, False)
    """
    daemon.os = _AcknowledgingOs()


if __name__ == "__main__":
    prefer_installed_pyspark()
    preload()
    warm_numba()
    import pyspark.daemon

    acknowledge_reads_at_once(pyspark.daemon)
    pyspark.daemon.manager()
