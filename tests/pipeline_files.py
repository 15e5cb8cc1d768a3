"""Pipeline files written by the pipeline tests, and where their keys stand."""

from __future__ import annotations

import textwrap


def write_pipeline(folder, text: str, name: str = "p.toml") -> str:
    """``text`` (dedented) as the pipeline file ``name`` in ``folder``; its path."""
    target = folder / name
    target.write_text(textwrap.dedent(text))
    return str(target)


def line_of(text: str, fragment: str) -> int:
    """The number of the first line of ``text`` holding ``fragment``."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)
