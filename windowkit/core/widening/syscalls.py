"""System-call streams: the paper's line format and ``strace -f -tt`` output, as rows.

The paper's format, one call per line: ``systemcall [name=value ...] [=> return]``, e.g.
``accept fd=5 => 6``. Values are single tokens, or double-quoted with ``\\"`` and ``\\\\``
escapes.

``strace -f -tt`` lines (``PID HH:MM:SS.micro call(args) = ret``) convert to the same shape:

* ``accept(3, ...) = 5`` and ``accept4`` -> ``accept fd=3 => 5``;
* ``dup(5) = 6`` -> ``dup fd=5 => 6``; ``dup2(5, 0) = 0`` and ``dup3`` -> ``dup fd=5 => 0``;
* ``execve("/bin/sh", ...) = 0`` -> ``execve exe=/bin/sh => 0``;
* any other call -> its name, ``fd=`` its first argument when that is an integer, and its
  return value (the token after ``=``; none for ``?``).

A call split by strace into ``<unfinished ...>`` and ``<... resumed>`` lines is joined (its time
is the start's). Lines that are not calls (signals ``--- ... ---``, exits ``+++ ... +++``) and
lines that cannot be parsed are never dropped silently: they come back in a separate frame with
their line number, text and reason.

Rows carry ``key`` (the pid, or one key for the host), ``time`` (int64 µs), ``call``, ``ret``
and one column per argument name met (``fd``, ``exe``), all values as text or None.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Literal

import pandas as pd

KeyBy = Literal["pid", "host"]
"""Key of a converted strace row: its process id, or one key (``"host"``) for the trace."""

REJECTED_COLUMNS = ["line_no", "line", "reason"]

_TOKEN = re.compile(r'(?:"(?:[^"\\]|\\.)*"|[^\s"])+')
_STRACE = re.compile(
    r"^(?:\[pid\s+(?P<pid1>\d+)\]\s+|(?P<pid2>\d+)\s+)?"
    r"(?P<clock>\d\d:\d\d:\d\d(?:\.\d{1,9})?)\s+(?P<rest>.*)$")
_CALL = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\((?P<args>.*)\)\s*=\s*(?P<ret>\S+)"
                   r"(?P<tail>.*)$")
_UNFINISHED = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\((?P<args>.*?)\s*<unfinished \.\.\.>$")
_RESUMED = re.compile(r"^<\.\.\. (?P<name>[A-Za-z_][A-Za-z0-9_]*) resumed>(?P<rest>.*)$")
_INT = re.compile(r"^-?\d+$")
_QUOTED = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"')


def parse_syscall_line(line: str) -> dict[str, str | None]:
    """Parse one line of the paper's format into ``{"call": ..., "ret": ..., arg: value}``.

    Raises
    ------
    ValueError
        If the line is empty or malformed (the message says where).

    Examples
    --------
    >>> parse_syscall_line("accept fd=5 => 6")
    {'call': 'accept', 'ret': '6', 'fd': '5'}
    >>> parse_syscall_line('execve exe="/usr/bin/my sh"')
    {'call': 'execve', 'ret': None, 'exe': '/usr/bin/my sh'}
    >>> parse_syscall_line("dup fd=5 =>")
    Traceback (most recent call last):
    ...
    ValueError: column 10: expected a return value after '=>'
    """
    if _open_quote(line):
        msg = f"column {line.index(chr(34)) + 1}: unterminated string"
        raise ValueError(msg)
    tokens = [(m.start() + 1, m.group(0)) for m in _TOKEN.finditer(line)]
    if not tokens:
        msg = "column 1: empty line"
        raise ValueError(msg)
    col, name = tokens[0]
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
        msg = f"column {col}: expected a system call name, got {name!r}"
        raise ValueError(msg)
    row: dict[str, str | None] = {"call": name, "ret": None}
    for i in range(1, len(tokens)):
        col, text = tokens[i]
        if text == "=>":
            if i + 1 >= len(tokens):
                msg = f"column {col}: expected a return value after '=>'"
                raise ValueError(msg)
            if i + 2 < len(tokens):
                msg = (f"column {tokens[i + 2][0]}: unexpected {tokens[i + 2][1]!r} after the "
                       "return value")
                raise ValueError(msg)
            row["ret"] = _unquote(tokens[i + 1][1])
            break
        arg, eq, value = text.partition("=")
        if not eq or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", arg):
            msg = f"column {col}: expected name=value, got {text!r}"
            raise ValueError(msg)
        if arg in ("key", "time", "call", "ret") or arg in row:
            msg = f"column {col}: argument name {arg!r} is reserved or repeated"
            raise ValueError(msg)
        if value == "":
            msg = f"column {col}: argument {arg!r} has no value"
            raise ValueError(msg)
        row[arg] = _unquote(value)
    return row


def _open_quote(line: str) -> bool:
    """Whether a double quote is left open (escaped quotes inside strings do not count)."""
    inside, i = False, 0
    while i < len(line):
        if inside and line[i] == "\\":
            i += 2
            continue
        if line[i] == '"':
            inside = not inside
        i += 1
    return inside


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        return re.sub(r'\\(["\\])', r"\1", value[1:-1])
    return value


def read_syscalls(
    lines: Iterable[str], unit: int = 1_000_000, key: str = "host"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows of a trace in the paper's format, one call per ``unit`` µs (as in the case study).

    Blank lines and ``#`` comments are skipped; malformed lines are returned apart.

    Examples
    --------
    >>> rows, rejected = read_syscalls(["accept fd=5 => 6", "dup fd=", "execve exe=sh"])
    >>> rows[["time", "call", "fd", "exe", "ret"]].values.tolist()
    [[0, 'accept', '5', None, '6'], [2000000, 'execve', None, 'sh', None]]
    >>> rejected.values.tolist()
    [[2, 'dup fd=', "column 5: argument 'fd' has no value"]]
    """
    records, rejected = [], []
    for i, raw in enumerate(lines, start=1):
        line = raw.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            row = parse_syscall_line(line)
        except ValueError as exc:
            rejected.append((i, line, str(exc)))
            continue
        row.update({"key": key, "time": (i - 1) * unit, "line_no": i})
        records.append(row)
    return _rows_frame(records), pd.DataFrame(rejected, columns=REJECTED_COLUMNS)


def read_strace(
    lines: Iterable[str], key: KeyBy = "pid", start_date: dt.date | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Convert ``strace -f -tt`` output to rows (see the module docstring).

    Parameters
    ----------
    lines : iterable of str
        The trace.
    key : {"pid", "host"}
        One key per process (default) or one for the whole trace.
    start_date : datetime.date, optional
        The day of the trace's first line (strace's ``-tt`` prints the time of day only);
        default 1970-01-01, so times are µs since that midnight. A clock that goes back by
        more than 12 hours is taken to have passed midnight.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        The rows sorted by time (columns ``key``, ``time``, ``call``, ``ret``, the argument
        columns, ``pid``, ``line_no``, ``text``: the paper's line), and the rejected lines
        (``line_no``, ``line``, ``reason``).

    Examples
    --------
    >>> trace = ["11248 19:37:34.703172 accept4(3,  <unfinished ...>",
    ...          "11250 19:37:35.246056 connect(3, {sa_family=AF_INET}, 16) = 0",
    ...          "11248 19:37:35.246233 <... accept4 resumed>{sa_family=AF_INET}, [16], 0) = 4",
    ...          "11248 19:37:35.246596 dup2(4, 0)        = 0",
    ...          '11248 19:37:35.246789 execve("/bin/sh", ["/bin/sh"], 0x7ffd /* 35 vars */) = 0',
    ...          "11250 19:37:35.3 +++ exited with 0 +++"]
    >>> rows, rejected = read_strace(trace)
    >>> rows["text"].tolist()
    ['accept fd=3 => 4', 'connect fd=3 => 0', 'dup fd=4 => 0', 'execve exe=/bin/sh => 0']
    >>> rows["key"].tolist(), rejected["reason"].tolist()
    ([11248, 11250, 11248, 11248], ['not a system call'])
    """
    if key not in ("pid", "host"):
        msg = f"`key` must be one of 'pid', 'host'; got {key!r}"
        raise ValueError(msg)
    day = (start_date or dt.date(1970, 1, 1)) - dt.date(1970, 1, 1)
    day_us = day.days * 86_400_000_000
    records, rejected = [], []
    unfinished: dict[int, tuple[int, str, str, int]] = {}
    last_clock = None
    for i, raw in enumerate(lines, start=1):
        line = raw.rstrip("\n")
        if not line.strip():
            continue
        m = _STRACE.match(line)
        if m is None:
            rejected.append((i, line, "unparsable: expected [PID] HH:MM:SS.micro call(...)"))
            continue
        pid = int(m.group("pid1") or m.group("pid2") or 0)
        clock = _clock_us(m.group("clock"))
        if last_clock is not None and clock < last_clock - 43_200_000_000:
            day_us += 86_400_000_000
        last_clock = clock
        time = day_us + clock
        rest = m.group("rest").strip()
        if rest.startswith(("---", "+++")):
            rejected.append((i, line, "not a system call"))
            continue
        u = _UNFINISHED.match(rest)
        if u is not None:
            unfinished[pid] = (time, u.group("name"), u.group("args"), i)
            continue
        r = _RESUMED.match(rest)
        if r is not None:
            start = unfinished.pop(pid, None)
            if start is None or start[1] != r.group("name"):
                rejected.append((i, line, "resumed call without its start"))
                continue
            time, name, head, i_start = start
            rest = f"{name}({head}{' ' if head else ''}{r.group('rest')}"
        else:
            i_start = i
        c = _CALL.match(rest)
        if c is None:
            rejected.append((i, line, "unparsable: expected call(args) = return"))
            continue
        row = convert_call(c.group("name"), c.group("args"), c.group("ret"))
        row.update({"key": "host" if key == "host" else pid, "time": time, "pid": pid,
                    "line_no": i_start})
        records.append(row)
    for pid, (_, name, _, i) in sorted(unfinished.items()):
        rejected.append((i, f"{pid} {name}(... <unfinished ...>", "never resumed"))
    rows = _rows_frame(records)
    if len(rows):
        rows = rows.sort_values(["time", "line_no"], kind="stable").reset_index(drop=True)
        rows["text"] = [format_syscall(r) for r in rows.to_dict(orient="records")]
    rejected = pd.DataFrame(sorted(rejected), columns=REJECTED_COLUMNS)
    return rows, rejected


def convert_call(name: str, args: str, ret: str) -> dict[str, str | None]:
    """One strace call as the paper's fields.

    Examples
    --------
    >>> convert_call("dup3", "5, 1, O_CLOEXEC", "1")
    {'call': 'dup', 'ret': '1', 'fd': '5'}
    >>> convert_call("openat", 'AT_FDCWD, "/etc/passwd", O_RDONLY', "3")
    {'call': 'openat', 'ret': '3'}
    >>> convert_call("exit_group", "0", "?")
    {'call': 'exit_group', 'ret': None, 'fd': '0'}
    """
    first = args.split(",", 1)[0].strip()
    value = None if ret == "?" else ret
    if name in ("accept", "accept4"):
        return {"call": "accept", "ret": value, "fd": first}
    if name in ("dup", "dup2", "dup3"):
        return {"call": "dup", "ret": value, "fd": first}
    if name in ("execve", "execveat"):
        quoted = _QUOTED.match(args if name == "execve" else args.split(",", 1)[-1])
        row = {"call": "execve", "ret": value}
        if quoted:
            row["exe"] = bytes(quoted.group(1), "utf-8").decode("unicode_escape")
        return row
    row = {"call": name, "ret": value}
    if _INT.match(first):
        row["fd"] = first
    return row


def format_syscall(row: dict) -> str:
    """The paper's line for a row (arguments in name order, None values left out).

    Examples
    --------
    >>> format_syscall({"call": "execve", "exe": "/bin/my sh", "ret": "0", "fd": None})
    'execve exe="/bin/my sh" => 0'
    """
    skip = {"call", "ret", "key", "time", "pid", "line_no", "text"}
    parts = [str(row["call"])]
    for name in sorted(k for k in row if k not in skip):
        value = row[name]
        if value is None or (isinstance(value, float) and value != value):
            continue
        parts.append(f"{name}={_quote(str(value))}")
    ret = row.get("ret")
    if ret is not None and not (isinstance(ret, float) and ret != ret):
        parts += ["=>", _quote(str(ret))]
    return " ".join(parts)


def _quote(value: str) -> str:
    if value and not re.search(r'[\s"=\\]', value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _clock_us(clock: str) -> int:
    hms, _, frac = clock.partition(".")
    h, m, s = (int(x) for x in hms.split(":"))
    micros = int((frac + "000000")[:6]) if frac else 0
    return ((h * 60 + m) * 60 + s) * 1_000_000 + micros


def _rows_frame(records: list[dict]) -> pd.DataFrame:
    base = ["key", "time", "call", "ret"]
    args = sorted({k for r in records for k in r} - {*base, "pid", "line_no"})
    extra = [c for c in ("pid", "line_no") if any(c in r for r in records)]
    frame = pd.DataFrame.from_records(records, columns=[*base, *args, *extra])
    frame = frame.astype(object).where(frame.notna(), None)
    for c in ("time", "line_no", *(["pid"] if "pid" in extra else [])):
        if c in frame:
            frame[c] = frame[c].astype("int64")
    return frame
