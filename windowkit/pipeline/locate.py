"""Where a key of a TOML file is written: the line an error about it points to.

``tomllib`` gives values, not positions, so the lines are found by a light scan of the text:
table headers (``[a.b]``, ``[[a]]``) and ``key =`` lines, which is what a pipeline file holds.
A key that cannot be found (a value in an inline table, say) falls back to its table's line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_.\-"' ]+?)\s*=""")


def _parts(dotted: str) -> list[str]:
    parts = re.findall(r'"([^"]*)"|\'([^\']*)\'|([^.\s]+)', dotted)
    return [next(p for p in group if p) if any(group) else "" for group in parts]


class KeyLines:
    """The line of each table and key of a TOML text.

    Examples
    --------
    >>> text = ('[pipeline]\\noutput = "out"\\n\\n'
    ...         '[steps.frames]\\nfunction = "x"\\nwhen = "a > 1"\\n')
    >>> lines = KeyLines(text)
    >>> lines.line_of(("steps", "frames", "when")), lines.line_of(("steps", "frames", "nope"))
    (6, 4)
    >>> lines.line_of(("pipeline",)), lines.line_of(("sources",))
    (1, None)
    """

    def __init__(self, text: str) -> None:
        self._lines: dict[tuple, int] = {}
        array_counts: dict[tuple, int] = {}
        table: tuple = ()
        in_multiline = False
        for number, line in enumerate(text.splitlines(), start=1):
            if in_multiline:
                in_multiline = line.count('"""') % 2 == 0 and line.count("'''") % 2 == 0
                continue
            header = _HEADER.match(line)
            if header:
                path = tuple(_parts(header.group(2)))
                if header.group(1) == "[[":
                    index = array_counts.get(path, 0)
                    array_counts[path] = index + 1
                    path = (*path, index)
                table = path
                self._lines.setdefault(table, number)
                continue
            key = _KEY.match(line)
            if key and not line.lstrip().startswith("#"):
                self._lines.setdefault((*table, *_parts(key.group(1).strip())), number)
                rest = line[key.end():]
                in_multiline = rest.count('"""') % 2 == 1 or rest.count("'''") % 2 == 1

    def line_of(self, path: Sequence) -> int | None:
        """The line of ``path``, or of the nearest enclosing table or key written in the file."""
        path = tuple(path)
        while path:
            if path in self._lines:
                return self._lines[path]
            path = path[:-1]
        return None
