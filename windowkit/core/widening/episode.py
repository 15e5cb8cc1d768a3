"""The episode language: serial/parallel episodes over system-call-like events, as text.

One step per line (or separated by ``;``), in order; braces group steps that may occur in any
order; ``$name`` binds a value on its first use and must take the same value wherever it
appears; ``$_`` accepts any value; other events may interleave; ``#`` starts a comment::

    accept fd=$x => $y
    { dup fd=$y => 0 ; dup fd=$y => 1 ; dup fd=$y => 2 }
    execve exe=$z

A step ``call name=term ... [=> term]`` matches an event with that call name whose arguments
named in the step (others are ignored) and return value match the terms: a literal must be
equal (as text), a variable must agree with its binding. Values with spaces or ``{};=#$"``
are written in double quotes (``\\"`` and ``\\\\`` escape). A malformed episode raises
``ValueError`` naming the line and column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

TermKind = Literal["const", "var", "any"]

#: Column names the operator reserves; an episode's argument may not use them.
RESERVED = ("key", "time", "call", "ret")

REMOTE_SHELL = """\
# the paper's case study: accept a connection, put it on stdin/stdout/stderr, run a program
accept fd=$x => $y
{ dup fd=$y => 0 ; dup fd=$y => 1 ; dup fd=$y => 2 }
execve exe=$z
"""
"""The paper's remote-shell episode (section 5)."""

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_WORD_STOP = set(" \t\r\n{};=#$\"")


@dataclass(frozen=True)
class Term:
    """A literal value, a variable or the wildcard ``$_``.

    Examples
    --------
    >>> str(Term("var", "y")), str(Term("const", "0")), str(Term("any", ""))
    ('$y', '0', '$_')
    """

    kind: TermKind
    value: str

    def __str__(self) -> str:
        if self.kind == "var":
            return f"${self.value}"
        if self.kind == "any":
            return "$_"
        plain = self.value and not (set(self.value) & _WORD_STOP)
        if plain:
            return self.value
        escaped = self.value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'


@dataclass(frozen=True)
class Step:
    """One event pattern: call name, argument terms and an optional return term.

    Examples
    --------
    >>> s = parse_episode("dup fd=$y => 0").steps[0]
    >>> s.call, [(n, str(t)) for n, t in s.args], str(s.ret)
    ('dup', [('fd', '$y')], '0')
    """

    call: str
    args: tuple[tuple[str, Term], ...]
    ret: Term | None
    line: int
    column: int

    def __str__(self) -> str:
        parts = [self.call, *(f"{n}={t}" for n, t in self.args)]
        if self.ret is not None:
            parts += ["=>", str(self.ret)]
        return " ".join(parts)


@dataclass(frozen=True)
class Episode:
    """A parsed episode: groups in order; the steps of a group in any order.

    Examples
    --------
    >>> e = parse_episode(REMOTE_SHELL)
    >>> [len(g) for g in e.groups], e.arg_names, e.variables
    ([1, 3, 1], ('exe', 'fd'), ('x', 'y', 'z'))
    >>> print(e)
    accept fd=$x => $y
    { dup fd=$y => 0 ; dup fd=$y => 1 ; dup fd=$y => 2 }
    execve exe=$z
    """

    groups: tuple[tuple[Step, ...], ...]

    @property
    def steps(self) -> tuple[Step, ...]:
        """The steps in written order."""
        return tuple(s for g in self.groups for s in g)

    @property
    def arg_names(self) -> tuple[str, ...]:
        """Argument names the episode reads, sorted."""
        return tuple(sorted({n for s in self.steps for n, _ in s.args}))

    @property
    def variables(self) -> tuple[str, ...]:
        """Variable names, sorted."""
        terms = [t for s in self.steps for t in (*(t for _, t in s.args), s.ret) if t is not None]
        return tuple(sorted({t.value for t in terms if t.kind == "var"}))

    def __str__(self) -> str:
        lines = []
        for group in self.groups:
            text = " ; ".join(str(s) for s in group)
            lines.append(text if len(group) == 1 else "{ " + text + " }")
        return "\n".join(lines)


@dataclass(frozen=True)
class _Token:
    kind: str  # word, string, var, any, lbrace, rbrace, semi, arrow, eq, newline, end
    text: str
    line: int
    column: int


def parse_episode(text: str) -> Episode:
    """Parse the episode language (see the module docstring).

    Parameters
    ----------
    text : str
        The episode.

    Returns
    -------
    Episode

    Raises
    ------
    ValueError
        On malformed text, naming the line and column (1-based).

    Examples
    --------
    >>> parse_episode("a x=1\\n{ b ; c => $v }").groups[1][1].ret
    Term(kind='var', value='v')
    >>> parse_episode("accept fd=$x =>\\nexecve")
    Traceback (most recent call last):
    ...
    ValueError: episode line 1, column 16: expected a value after '=>', got end of line
    >>> parse_episode("{ dup fd=$y => 0 ; dup fd=$y => 1")
    Traceback (most recent call last):
    ...
    ValueError: episode line 1, column 34: expected '}' to close the group opened at line 1, \
column 1, got end of text
    """
    if not isinstance(text, str):
        msg = f"`episode` must be a string; got {type(text).__name__}"
        raise ValueError(msg)
    return _Parser(_tokenize(text)).episode()


def _error(line: int, column: int, what: str) -> ValueError:
    return ValueError(f"episode line {line}, column {column}: {what}")


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    line, col, i, n = 1, 1, 0, len(text)
    while i < n:
        ch = text[i]
        start_col = col
        if ch == "\n":
            tokens.append(_Token("newline", "\n", line, col))
            line, col, i = line + 1, 1, i + 1
            continue
        if ch in " \t\r":
            i, col = i + 1, col + 1
            continue
        if ch == "#":
            while i < n and text[i] != "\n":
                i, col = i + 1, col + 1
            continue
        single = {"{": "lbrace", "}": "rbrace", ";": "semi"}
        if ch in single:
            tokens.append(_Token(single[ch], ch, line, col))
            i, col = i + 1, col + 1
        elif ch == "=":
            if text.startswith("=>", i):
                tokens.append(_Token("arrow", "=>", line, col))
                i, col = i + 2, col + 2
            else:
                tokens.append(_Token("eq", "=", line, col))
                i, col = i + 1, col + 1
        elif ch == "$":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            name = text[i + 1 : j]
            if not _IDENT.match(name):
                raise _error(line, col, f"expected a variable name after '$', got {name!r}")
            kind = "any" if name == "_" else "var"
            tokens.append(_Token(kind, name, line, col))
            col += j - i
            i = j
        elif ch == '"':
            j, chars = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\n":
                    break
                if text[j] == "\\" and j + 1 < n and text[j + 1] in '"\\':
                    j += 1
                chars.append(text[j])
                j += 1
            if j >= n or text[j] != '"':
                raise _error(line, start_col, "unterminated string")
            tokens.append(_Token("string", "".join(chars), line, col))
            col += j + 1 - i
            i = j + 1
        else:
            j = i
            while j < n and text[j] not in _WORD_STOP:
                j += 1
            tokens.append(_Token("word", text[i:j], line, col))
            col += j - i
            i = j
    tokens.append(_Token("end", "", line, col))
    return tokens


def _describe(tok: _Token) -> str:
    if tok.kind == "end":
        return "end of text"
    if tok.kind == "newline":
        return "end of line"
    if tok.kind == "var":
        return f"'${tok.text}'"
    if tok.kind == "any":
        return "'$_'"
    return repr(tok.text)


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> _Token:
        return self.tokens[self.pos]

    def take(self) -> _Token:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def skip_separators(self, allow_newline: bool = True) -> None:
        kinds = ("newline", "semi") if allow_newline else ("semi",)
        while self.peek().kind in kinds:
            self.pos += 1

    def episode(self) -> Episode:
        groups: list[tuple[Step, ...]] = []
        self.skip_separators()
        while self.peek().kind != "end":
            tok = self.peek()
            if tok.kind == "lbrace":
                groups.append(self.group())
            elif tok.kind == "rbrace":
                raise _error(tok.line, tok.column, "'}' without a matching '{'")
            else:
                groups.append((self.step(),))
            after = self.peek()
            if after.kind not in ("newline", "semi", "end"):
                raise _error(after.line, after.column,
                             f"expected ';' or a new line after a step, got {_describe(after)}")
            self.skip_separators()
        if not groups:
            tok = self.peek()
            raise _error(tok.line, tok.column, "the episode has no step")
        return Episode(tuple(groups))

    def group(self) -> tuple[Step, ...]:
        opening = self.take()
        steps: list[Step] = []
        self.skip_separators()
        while True:
            tok = self.peek()
            if tok.kind == "rbrace":
                self.take()
                break
            if tok.kind == "end":
                raise _error(tok.line, tok.column,
                             f"expected '}}' to close the group opened at line {opening.line}, "
                             f"column {opening.column}, got end of text")
            if tok.kind == "lbrace":
                raise _error(tok.line, tok.column, "groups cannot be nested")
            steps.append(self.step())
            after = self.peek()
            if after.kind not in ("newline", "semi", "rbrace", "end"):
                raise _error(after.line, after.column,
                             f"expected ';', '}}' or a new line after a step, got "
                             f"{_describe(after)}")
            self.skip_separators()
        if not steps:
            raise _error(opening.line, opening.column, "empty group '{ }'")
        return tuple(steps)

    def step(self) -> Step:
        head = self.take()
        if head.kind != "word" or not _IDENT.match(head.text):
            raise _error(head.line, head.column,
                         f"expected a system call name, got {_describe(head)}")
        args: list[tuple[str, Term]] = []
        seen: set[str] = set()
        ret = None
        while self.peek().kind == "word":
            name_tok = self.take()
            if not _IDENT.match(name_tok.text):
                raise _error(name_tok.line, name_tok.column,
                             f"expected an argument name, got {_describe(name_tok)}")
            eq = self.take()
            if eq.kind != "eq":
                raise _error(eq.line, eq.column,
                             f"expected '=' after argument {name_tok.text!r}, got "
                             f"{_describe(eq)}")
            if name_tok.text in RESERVED:
                raise _error(name_tok.line, name_tok.column,
                             f"argument name {name_tok.text!r} is reserved (reserved: "
                             f"{', '.join(RESERVED)})")
            if name_tok.text in seen:
                raise _error(name_tok.line, name_tok.column,
                             f"argument {name_tok.text!r} given twice")
            seen.add(name_tok.text)
            args.append((name_tok.text, self.term(f"'{name_tok.text}='")))
        if self.peek().kind == "arrow":
            self.take()
            ret = self.term("'=>'")
        return Step(head.text, tuple(args), ret, head.line, head.column)

    def term(self, after: str) -> Term:
        tok = self.take()
        if tok.kind in ("word", "string"):
            return Term("const", tok.text)
        if tok.kind == "var":
            return Term("var", tok.text)
        if tok.kind == "any":
            return Term("any", "")
        raise _error(tok.line, tok.column, f"expected a value after {after}, got {_describe(tok)}")
