"""Where Spark runs: the master URL (``--master``) or Spark Connect URL (``--remote``), checked
before Spark starts.

A mistyped URL would otherwise reach the JVM and come back 10-20 s later as a Java error; a
value carrying shell text (``local[*]; rm -rf X``) is never a URL. ``sc://`` names a Spark
Connect server: given as a master, it is taken as the remote.
"""

from __future__ import annotations

import re

_HOST = r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-_.]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])"
_PORT = r"(?::\d{1,5})"
_LOCAL = r"local(?:\[(?:\*|[1-9]\d*)(?:\s*,\s*[1-9]\d*)?\])?"
#: Where windowkit runs Spark when told nothing: every local core, and up to 4 attempts per
#: task. Spark's local mode retries a failed task (a Python worker killed, say) only when the
#: master says so in its ``local[N, F]`` form; ``local[N]`` or ``local[*]`` given by a user
#: stays as given, one attempt per task.
DEFAULT_MASTER = "local[*,4]"
MASTERS = {
    "local, local[N], local[*], local[N,F]": _LOCAL,
    "local-cluster[N,C,M]": r"local-cluster\[[1-9]\d*,\s*[1-9]\d*,\s*[1-9]\d*\]",
    "spark://HOST:PORT": rf"spark://{_HOST}{_PORT}(?:,{_HOST}{_PORT})*",
    "yarn": r"yarn",
    "k8s://URL": rf"k8s://(?:https?://)?{_HOST}{_PORT}?",
}
REMOTES = {
    "sc://HOST[:PORT][/;key=value...]":
        rf"sc://{_HOST}{_PORT}?(?:/(?:;[A-Za-z_][A-Za-z0-9_]*=[^;\s/]*)*)?",
    "local, local[N], local[*], local[N,F] (a local Spark Connect server)": _LOCAL,
}


def _matches(value: str, patterns: dict[str, str]) -> bool:
    return any(re.fullmatch(p, value) for p in patterns.values())


def spark_target(master: str | None, remote: str | None,
                 names: tuple[str, str] = ("`--master`", "`--remote`"),
                 ) -> tuple[str | None, str | None]:
    """Check a master URL and a Spark Connect URL; return ``(master, remote)`` to start with.

    At most one of them may be given. A master starting with ``sc://`` is a Spark Connect URL
    and is returned as the remote.

    Parameters
    ----------
    master : str, optional
        A Spark master URL (``local[*]``, ``local[*,4]``, ``spark://host:7077``, ``yarn``,
        ``k8s://...``).
    remote : str, optional
        A Spark Connect URL (``sc://host:15002``, or ``local[N]`` for a local server).
    names : tuple of str
        How the errors name the two (options, or a pipeline file's keys).

    Returns
    -------
    tuple of (str or None, str or None)
        The master and the remote, at most one of them set.

    Raises
    ------
    ValueError
        A value is not a URL of the accepted forms (listed in the message), or both are given.

    Examples
    --------
    >>> spark_target("local[4]", None), spark_target("sc://spark.example.com:15002", None)
    (('local[4]', None), (None, 'sc://spark.example.com:15002'))
    >>> spark_target(DEFAULT_MASTER, None), spark_target("local[2, 3]", None)
    (('local[*,4]', None), ('local[2, 3]', None))
    >>> spark_target("local[*]; rm -rf X", None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `--master` 'local[*]; rm -rf X' is not a Spark master URL; accepted: local, ...
    """
    master_name, remote_name = names
    if master is not None and master.startswith("sc://"):
        if remote is not None:
            msg = f"{master_name} {master!r} is a Spark Connect URL and {remote_name} is given " \
                  "too; give one of them"
            raise ValueError(msg)
        master, remote, remote_name = None, master, master_name
    if master is not None and remote is not None:
        msg = (f"{master_name} and {remote_name} both say where Spark runs ({master!r}, "
               f"{remote!r}); give one of them")
        raise ValueError(msg)
    for value, name, patterns, what in ((master, master_name, MASTERS, "Spark master URL"),
                                        (remote, remote_name, REMOTES, "Spark Connect URL")):
        if value is not None and not _matches(value, patterns):
            accepted = [*patterns, "sc://HOST[:PORT] (Spark Connect)"] \
                if patterns is MASTERS else list(patterns)
            msg = f"{name} {value!r} is not a {what}; accepted: {', '.join(accepted)}"
            raise ValueError(msg)
    return master, remote
