"""A test hook in windowkit's Python tasks: hold still for a ``kill -9`` of the worker.

Spark retries a task whose Python worker died (when the job allows task retries: on a cluster
by default, in local mode with a master ``local[N, F]``). To prove that such a retry gives the
same output, a test must kill a worker while it runs a windowkit task, not an idle one. With
:data:`WORKER_MARKER_ENV` set to a folder, the first windowkit task to start (a batch job's
task, or a streaming micro-batch's stateful step) writes its worker's process id to
``FOLDER/pid`` and waits there to be killed; every later task (the retry among them) finds the
file and runs on. Unset, the hook costs one environment lookup per task.
"""

from __future__ import annotations

import os
import time

#: Test hook: a folder in which the first windowkit task writes its worker's pid, then waits
#: (at most :data:`WAIT_S` seconds) for the test to kill that worker.
WORKER_MARKER_ENV = "WINDOWKIT_TEST_WORKER_MARKER"
WAIT_S = 120.0


def wait_to_be_killed() -> bool:
    """With :data:`WORKER_MARKER_ENV` set, the first task to call this writes its pid and
    waits to be killed; returns whether this call waited (it returns only if nobody killed it).

    Examples
    --------
    >>> wait_to_be_killed()  # the variable is not set
    False
    """
    folder = os.environ.get(WORKER_MARKER_ENV)
    if not folder:
        return False
    # The claim is a file that stays: a claim renamed into the pid file would let the next
    # task (the other shard's, the retry) claim again and wait its WAIT_S out.
    try:
        os.close(os.open(os.path.join(folder, "claimed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:  # another task took the part, or this is the retry
        return False
    path = os.path.join(folder, "pid")
    with open(path + ".tmp", "w") as fh:
        fh.write(str(os.getpid()))
    os.rename(path + ".tmp", path)  # the test reads a whole pid or none
    time.sleep(WAIT_S)
    return True
