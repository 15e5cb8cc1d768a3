"""The argument parser of the ``windowkit`` command: help that shows defaults, one-line errors.

Every subcommand's parser is a :class:`CommandParser`: its ``--help`` shows each option's
default (where there is one), and a mistake argparse finds (an unknown or misspelled option, a
missing required one, a value outside its choices) is one line naming the subcommand, with a
"did you mean" for an option close to a known one, and exit code 2, instead of argparse's
usage block.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Mapping
from typing import NoReturn


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default after its help, unless there is none to show.

    No default is shown for an option without one (``None``), a flag (``False``), or one whose
    help already says what its default is.

    Examples
    --------
    >>> p = argparse.ArgumentParser(prog="x", formatter_class=HelpFormatter)
    >>> _ = p.add_argument("--slot", default="30 seconds", help="slot length")
    >>> _ = p.add_argument("--by", default=None, help="key column")
    >>> text = p.format_help()
    >>> "slot length (default: 30 seconds)" in text, "None" in text
    (True, False)
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (action.default in (None, False, argparse.SUPPRESS) or not action.option_strings
                or "%(default)" in text or "default" in text.lower()):
            return text
        return f"{text} (default: %(default)s)"


class CommandParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose mistakes are one line and exit code 2.

    Examples
    --------
    >>> p = CommandParser(prog="windowkit frames")
    >>> _ = p.add_argument("--min-duration")
    >>> p.parse_args(["--min_duration", "3 rows"])  # doctest: +SKIP
    windowkit frames: unknown option --min_duration; did you mean --min-duration?
    >>> unknown_option_message(p, ["--min_duration", "3 rows"])
    'unknown option --min_duration; did you mean --min-duration?'
    """

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Print ``message`` on one line, pointing at ``--help``, and exit with code 2.

        Examples
        --------
        >>> import contextlib, io
        >>> with contextlib.redirect_stderr(io.StringIO()) as err, contextlib.suppress(SystemExit):
        ...     CommandParser(prog="windowkit fill").error("the following arguments are required")
        >>> err.getvalue()
        'windowkit fill: the following arguments are required (see windowkit fill --help)\\n'
        """
        self.exit(2, f"{self.prog}: {with_suggestion(message)} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None) -> argparse.Namespace:  # type: ignore[override]
        """Parse ``args``; an argument no parser knows is reported by its subcommand's parser,
        with the option it is closest to.

        Examples
        --------
        >>> p = CommandParser(prog="w")
        >>> _ = p.add_argument("--slot", default="30 seconds")
        >>> p.parse_args([]).slot
        '30 seconds'
        """
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            parser = command_parser(self, parsed) or self
            parser.exit(2, f"{parser.prog}: {unknown_option_message(parser, extras)}\n")
        return parsed


_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<given>[^']*)' \(choose from (?P<choices>.*)\)$")


def with_suggestion(message: str) -> str:
    """argparse's ``message``, with the closest choice to a value outside its choices.

    Examples
    --------
    >>> with_suggestion("--kind: invalid choice: 'delt' (choose from 'boundary', 'delta')")
    "--kind: invalid choice: 'delt' (choose from 'boundary', 'delta'); did you mean 'delta'?"
    """
    found = _INVALID_CHOICE.search(message)
    if found is None:
        return message
    choices = re.findall(r"'([^']*)'", found.group("choices"))
    close = difflib.get_close_matches(found.group("given"), choices, n=1)
    return f"{message}; did you mean {close[0]!r}?" if close else message


def command_parser(parser: argparse.ArgumentParser,
                   parsed: argparse.Namespace) -> argparse.ArgumentParser | None:
    """The parser of the subcommand ``parsed`` holds (``parser``'s ``command``), or None.

    Examples
    --------
    >>> p = CommandParser(prog="w")
    >>> sub = p.add_subparsers(dest="command").add_parser("go")
    >>> command_parser(p, argparse.Namespace(command="go")) is sub
    True
    """
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(getattr(parsed, action.dest, None))
    return None


def unknown_option_message(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """The one line for arguments ``parser`` does not know: the first unknown option, and the
    option it is closest to (``_`` and ``-`` taken alike).

    Examples
    --------
    >>> p = CommandParser(prog="w")
    >>> _ = p.add_argument("--window-slots")
    >>> unknown_option_message(p, ["--windowslots", "3"])
    'unknown option --windowslots; did you mean --window-slots?'
    >>> unknown_option_message(p, ["stray"])
    "unexpected argument 'stray'"
    """
    option = next((e for e in extras if e.startswith("-")), None)
    if option is None:
        return f"unexpected argument {extras[0]!r}"
    name = option.split("=", 1)[0]
    known = [s for s in parser._option_string_actions if s.startswith("--")]
    normal = {s.replace("_", "-").lower(): s for s in known}
    close = difflib.get_close_matches(name.replace("_", "-").lower(), list(normal), n=1,
                                      cutoff=0.6)
    hint = f"; did you mean {normal[close[0]]}?" if close else ""
    return f"unknown option {name}{hint}"


def option_flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each option's parameter name (its ``dest``) -> its long flag.

    Examples
    --------
    >>> p = CommandParser(prog="w")
    >>> _ = p.add_argument("--window-slots", type=int)
    >>> option_flags(p)["window_slots"]
    '--window-slots'
    """
    flags = {}
    for action in parser._actions:
        longs = [s for s in action.option_strings if s.startswith("--")]
        if longs and action.dest not in ("help", "version"):
            flags[action.dest] = longs[0]
    return flags


_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


def name_flags(message: str, flags: Mapping[str, str]) -> str:
    """``message`` with the parameters it names written as the options that set them:
    ```tick``` -> ```--tick```, ``unit='ticks'`` -> ``--unit ticks``.

    Examples
    --------
    >>> name_flags("`tick` is required with unit='ticks'", {"tick": "--tick", "unit": "--unit"})
    '`--tick` is required with --unit ticks'
    >>> name_flags("`n` must be positive", {"tick": "--tick"})
    '`n` must be positive'
    """
    def quoted(match: re.Match) -> str:
        flag = flags.get(match.group(1))
        return f"`{flag}`" if flag else match.group(0)

    def assigned(match: re.Match) -> str:
        flag = flags.get(match.group(1))
        if flag is None:
            return match.group(0)
        value = match.group(2)
        quotes = "'\""
        return f"{flag} {value[1:-1] if value[:1] in quotes else value}"

    message = re.sub(rf"`({_NAME})`", quoted, message)
    value = r"""('[^']*'|"[^"]*"|[^\s,;)]+)"""
    return re.sub(rf"""(?<![\w\-'"`])({_NAME})={value}""", assigned, message)
