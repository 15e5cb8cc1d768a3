"""What the report shows of one step: headline numbers, one figure, or a short note."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from windowkit.report.format import format_duration, format_number


@dataclass(frozen=True)
class Headline:
    """One headline number of a step.

    ``value`` is the number itself (counts, or durations in µs), which the page carries as a
    ``data-value`` attribute so that a reader (or a test) need not parse ``text``.

    Examples
    --------
    >>> Headline("frames", "frames (final)", 12, "12").label
    'frames (final)'
    """

    name: str
    label: str
    value: float | int | None
    text: str


@dataclass(frozen=True)
class Figure:
    """A PNG with its alt text and a one-line caption.

    Examples
    --------
    >>> Figure(b"png", "alt", "caption").data_uri
    'data:image/png;base64,cG5n'
    """

    png: bytes
    alt: str
    caption: str

    @property
    def data_uri(self) -> str:
        """The image as a ``data:`` URI, so the page needs no other file."""
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


@dataclass
class Section:
    """A step's part of the report, beyond what was asked and what was set aside.

    ``note`` replaces the figure when there is nothing to draw (no rows); ``error`` says why
    the section could not be built (the rest of the report still is).

    Examples
    --------
    >>> Section([Headline("rows_out", "rows out", 0, "0")], note="no rows").figure is None
    True
    """

    headlines: list[Headline] = field(default_factory=list)
    figure: Figure | None = None
    note: str = ""
    error: str = ""


def count(name: str, label: str, value: float | None) -> Headline:
    """A headline count (or real number).

    Examples
    --------
    >>> count("keys", "keys", 1234).text
    '1,234'
    """
    number = None if value is None else (int(value) if float(value).is_integer() else value)
    return Headline(name, label, number, format_number(number))


def duration(name: str, label: str, micros: float | None) -> Headline:
    """A headline duration, given in µs (``data-value`` stays in µs).

    Examples
    --------
    >>> duration("longest", "longest frame", 90_000_000).text
    '1.5 min'
    """
    value = None if micros is None else int(round(micros))
    return Headline(name, label, value, format_duration(value))
