"""An exact, compiled matcher of episodes (see :mod:`windowkit.core.widening.episode`).

Matches reported in a window (the brute-force ``windowkit.reference.episodes`` states the same
definition): an *occurrence* assigns each step a distinct row of the window, every row of a
group before every row of the next group, each row matching its step under one binding of the
variables. An occurrence's *interval* runs from its first to its last row. A window reports one
match per *minimal* interval (one holding an occurrence, no shorter interval inside it holding
one): the occurrence within it whose row positions, listed in written step order, are
lexicographically smallest.

Rows are encoded once as int64: column 0 the steps a row can meet by its literals (bit s for
step s; 0 for a row no step can use, which the operator may leave out of windows), then hashes of
the call name, the return value and each argument the episode reads (0 for a null value).
Values compare as text: pandas' fixed-key SipHash of the UTF-8 string (the same in every
process), so two distinct values that collide in 64 bits would compare equal, with probability
about 2**-64 per pair.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import pandas as pd

from windowkit.core.hashing import sip_hash
from windowkit.core.registry import register
from windowkit.core.widening.detector import Detector, Match
from windowkit.core.widening.episode import REMOTE_SHELL, Episode, parse_episode

CALL = "call"
RET = "ret"
_KIND = {"const": 0, "var": 1, "any": 2}


def hash_values(values: pd.Series | np.ndarray | list) -> np.ndarray:
    """Hash values as text to nonzero int64; null values become 0.

    Integers hash as their decimal text; floats with integral values as integers (so that a
    column read as float still matches ``fd=3``). A categorical column hashes its categories
    only.

    Examples
    --------
    >>> h = hash_values(pd.Series(["3", None, 3]))
    >>> bool(h[0] == h[2]), int(h[1])
    (True, 0)
    >>> bool(hash_values(pd.Series([3.0]))[0] == h[0])
    True
    """
    series = values if isinstance(values, pd.Series) else pd.Series(values)
    if isinstance(series.dtype, pd.CategoricalDtype):
        cats = series.cat.categories
        cat_hash = hash_values(pd.Series(np.asarray(cats, dtype=object)))
        codes = series.cat.codes.to_numpy()
        out = np.where(codes >= 0, cat_hash[np.maximum(codes, 0)] if len(cats) else 0, 0)
        return out.astype(np.int64)
    missing = series.isna().to_numpy()
    if series.dtype.kind == "f":
        whole = series.where(missing | (series % 1 != 0), series.fillna(0).astype(np.int64))
        text = whole.astype(object).where(~missing, "").map(_as_text)
    elif series.dtype.kind in "iub":
        text = series.astype(str)
    else:
        text = series.astype(object).where(~missing, "").map(_as_text)
    hashed = sip_hash(text.to_numpy(dtype=object)).view(np.int64)
    hashed = np.where(hashed == 0, 1, hashed)
    hashed[missing] = 0
    return hashed


def _as_text(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return v if isinstance(v, str) else str(v)


@register("EpisodeDetector")
class EpisodeDetector(Detector):
    """Detector of one episode, exact, compiled with numba.

    Parameters
    ----------
    episode : str or Episode
        The episode in the text form of :mod:`windowkit.core.widening.episode`, or
        ``"remote-shell"`` for the paper's case study.

    Examples
    --------
    >>> d = EpisodeDetector("remote-shell")
    >>> rows = pd.DataFrame({"call": ["accept", "read", "dup", "dup", "dup", "execve"],
    ...                      "fd": ["5", "3", "6", "6", "6", None],
    ...                      "exe": [None, None, None, None, None, "sh"],
    ...                      "ret": ["6", "10", "2", "1", "0", None]})
    >>> d.detect(d.encode(rows))
    [(0, 4, 3, 2, 5)]
    """

    relevance = 0
    column_type = "category"  # each distinct text of a batch is hashed once

    def __init__(self, episode: str | Episode = REMOTE_SHELL) -> None:
        if isinstance(episode, str) and episode.strip() == "remote-shell":
            episode = REMOTE_SHELL
        self.episode = episode if isinstance(episode, Episode) else parse_episode(episode)
        self.text = str(self.episode)
        self._compile()

    @property
    def columns(self) -> tuple[str, ...]:  # type: ignore[override]
        """Input columns: ``call``, ``ret`` and the arguments the episode reads."""
        return (CALL, RET, *self.episode.arg_names)

    @property
    def width(self) -> int:
        """Encoded columns: the step mask, then one hash per input column."""
        return 1 + len(self.columns)

    @property
    def required_bits(self) -> int:
        """Every step's bit: a window lacking a row for some step holds no occurrence."""
        return (1 << len(self._group)) - 1

    def _compile(self) -> None:
        ep = self.episode
        # encoded column of each field: 0 holds the step mask, 1 the call, 2 the return value
        col_of = {RET: 2, **{name: 3 + i for i, name in enumerate(ep.arg_names)}}
        var_of = {name: i for i, name in enumerate(ep.variables)}
        steps = ep.steps
        group = []
        ptr, cols, kinds, vals = [0], [], [], []
        for g, grp in enumerate(ep.groups):
            group += [g] * len(grp)
        for step in steps:
            terms = [(1, ("const", step.call))]
            terms += [(col_of[n], (t.kind, t.value)) for n, t in step.args]
            if step.ret is not None:
                terms.append((col_of[RET], (step.ret.kind, step.ret.value)))
            for col, (kind, value) in terms:
                cols.append(col)
                kinds.append(_KIND[kind])
                if kind == "const":
                    vals.append(int(hash_values(pd.Series([value], dtype=object))[0]))
                elif kind == "var":
                    vals.append(var_of[value])
                else:
                    vals.append(0)
            ptr.append(len(cols))
        if len(steps) > 62:
            msg = f"an episode may have at most 62 steps; got {len(steps)}"
            raise ValueError(msg)
        self._group = np.asarray(group, dtype=np.int64)
        self._ptr = np.asarray(ptr, dtype=np.int64)
        self._cols = np.asarray(cols, dtype=np.int64)
        self._kinds = np.asarray(kinds, dtype=np.int64)
        self._vals = np.asarray(vals, dtype=np.int64)
        self._n_vars = len(ep.variables)

    def encode(self, rows: pd.DataFrame) -> np.ndarray:
        """Hash the call, return and argument columns (a missing argument column is null).

        Examples
        --------
        >>> EpisodeDetector("execve exe=$z").encode(pd.DataFrame({"call": ["execve"]})).shape
        (1, 4)
        """
        if CALL not in rows:
            msg = (f"the episode detector needs a {CALL!r} column; the rows have "
                   f"{list(rows.columns)}")
            raise ValueError(msg)
        present = [(j, rows[name]) for j, name in enumerate(self.columns) if name in rows]
        if all(isinstance(c.dtype, pd.CategoricalDtype) for _, c in present):
            # per category, once per stream (chunks share categories): its hash and the
            # steps whose terms on that column it meets; a row's step mask is then the AND
            # over its columns, filled with the hashes in one compiled pass
            codes = np.empty((len(rows), len(present)), dtype=np.int32)
            hashes, bits, offsets, targets = [], [], [0], []
            base = (1 << len(self._group)) - 1
            for i, (j, column) in enumerate(present):
                codes[:, i] = column.cat.codes.to_numpy()
                h, b = self._category_tables(j, column.cat.categories)
                hashes.append(h)
                bits.append(b)
                offsets.append(offsets[-1] + len(h))
                targets.append(1 + j)
            for j in range(len(self.columns)):  # a column the rows lack is null throughout
                if self.columns[j] not in rows:
                    base &= int(self._column_bits(1 + j, np.zeros(1, np.int64))[0])
            return _encode_codes(codes, np.concatenate(hashes), np.concatenate(bits),
                                 np.asarray(offsets, np.int64), np.asarray(targets, np.int64),
                                 self.width, base)
        out = np.zeros((len(rows), self.width), dtype=np.int64)
        for j, column in present:
            out[:, 1 + j] = hash_values(column)
        out[:, 0] = _step_masks(out, self._ptr, self._cols, self._kinds, self._vals)
        return out

    def _category_tables(self, j: int, categories: pd.Index) -> tuple[np.ndarray, np.ndarray]:
        """Hashes and step bits of a categorical column's values, null first."""
        cache = self.__dict__.setdefault("_category_cache", {})
        known = cache.get(j)
        if known is not None and (known[0] is categories or (
                known[0].dtype == categories.dtype and known[0].equals(categories))):
            return known[1], known[2]
        hashes = np.concatenate([np.zeros(1, np.int64),
                                 hash_values(pd.Series(np.asarray(categories, dtype=object)))])
        bits = self._column_bits(1 + j, hashes)
        cache[j] = (categories, hashes, bits)
        return hashes, bits

    def _column_bits(self, target: int, values: np.ndarray) -> np.ndarray:
        """For each hashed value of encoded column ``target``: the steps whose terms on that
        column it meets (a literal equal, any other term present)."""
        bits = np.full(len(values), (1 << len(self._group)) - 1, dtype=np.int64)
        for s in range(len(self._ptr) - 1):
            for c in range(self._ptr[s], self._ptr[s + 1]):
                if self._cols[c] != target:
                    continue
                ok = values != 0
                if self._kinds[c] == 0:
                    ok &= values == self._vals[c]
                bits[~ok] &= ~(1 << s)
        return bits

    def detect(self, window: np.ndarray) -> list[Match]:
        """Matches in one window of encoded rows (positions in written step order)."""
        window = np.ascontiguousarray(window, dtype=np.int64)
        _, matches = self.detect_windows(window, np.array([0]), np.array([len(window)]))
        return matches

    def detect_windows(
        self, rows: np.ndarray, starts: np.ndarray, stops: np.ndarray
    ) -> tuple[np.ndarray, list[Match]]:
        """Matches in many windows ``rows[starts[i]:stops[i]]``, in one compiled call.

        Examples
        --------
        >>> d = EpisodeDetector("a\\nb")
        >>> rows = d.encode(pd.DataFrame({"call": ["a", "b", "a", "b"]}))
        >>> idx, m = d.detect_windows(rows, np.array([0, 1]), np.array([4, 4]))
        >>> idx.tolist(), m
        ([0, 0, 1], [(0, 1), (2, 3), (1, 2)])
        """
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        if rows.ndim != 2 or rows.shape[1] != self.width:
            msg = (f"encoded rows must have {self.width} columns (step mask, "
                   f"{', '.join(self.columns)}); got shape {rows.shape}")
            raise ValueError(msg)
        masks = np.ascontiguousarray(rows[:, 0])
        win, pos = _match_windows(rows, masks, np.asarray(starts, dtype=np.int64),
                                  np.asarray(stops, dtype=np.int64), self._group, self._ptr,
                                  self._cols, self._kinds, self._vals, self._n_vars)
        return win, [tuple(r) for r in pos.tolist()]

    def to_spec(self) -> dict[str, Any]:
        """The episode's text."""
        return {"episode": self.text}

    def __repr__(self) -> str:
        return f"EpisodeDetector({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EpisodeDetector) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


@numba.njit(cache=True)
def _encode_codes(codes, hashes, bits, offsets, targets, width,
                  base):  # pragma: no cover - compiled
    """Encoded rows from category codes: column ``targets[c]`` takes the hash of code
    ``codes[:, c]`` (``hashes[offsets[c]:offsets[c + 1]]``, null first); column 0 the AND of
    ``base`` and the codes' step bits."""
    n = codes.shape[0]
    out = np.zeros((n, width), dtype=np.int64)
    for i in range(n):
        m = base
        for c in range(codes.shape[1]):
            at = offsets[c] + codes[i, c] + 1
            out[i, targets[c]] = hashes[at]
            m &= bits[at]
        out[i, 0] = m
    return out


@numba.njit(cache=True)
def _row_mask(rows, i, ptr, cols, kinds, vals):  # pragma: no cover - compiled
    """Bit s: row i meets step s's literals and presence (not its variables)."""
    m = np.int64(0)
    for s in range(len(ptr) - 1):
        ok = True
        for c in range(ptr[s], ptr[s + 1]):
            v = rows[i, cols[c]]
            if v == 0 or (kinds[c] == 0 and v != vals[c]):
                ok = False
                break
        if ok:
            m |= np.int64(1) << s
    return m


@numba.njit(cache=True)
def _step_masks(rows, ptr, cols, kinds, vals):  # pragma: no cover - compiled
    """The step mask of each row (see :func:`_row_mask`)."""
    out = np.zeros(rows.shape[0], dtype=np.int64)
    for i in range(rows.shape[0]):
        out[i] = _row_mask(rows, i, ptr, cols, kinds, vals)
    return out


@numba.njit(cache=True)
def _search(rows, masks, cand, lo, hi, group, ptr, cols, kinds, vals, n_vars,
            choice):  # pragma: no cover - compiled
    """Is there an occurrence on candidates ``cand[lo..hi]``? The lexicographically smallest
    one (in written step order) is left in ``choice`` (indices into ``cand``)."""
    n_steps = len(group)
    bound_by = np.full(max(n_vars, 1), -1, dtype=np.int64)
    value = np.zeros(max(n_vars, 1), dtype=np.int64)
    s = 0
    choice[0] = lo - 1
    while s >= 0:
        for v in range(n_vars):  # undo what this step bound with its previous choice
            if bound_by[v] == s:
                bound_by[v] = -1
        floor = lo
        if group[s] > 0:  # after every row of the previous group
            for t in range(s):
                if group[t] == group[s] - 1 and choice[t] + 1 > floor:
                    floor = choice[t] + 1
        c = max(choice[s] + 1, floor)
        found = False
        while c <= hi:
            row = cand[c]
            if (masks[row] >> s) & 1:
                used = False
                for t in range(s):
                    if group[t] == group[s] and choice[t] == c:
                        used = True
                        break
                if not used:
                    ok = True
                    for k in range(ptr[s], ptr[s + 1]):
                        if kinds[k] != 1:
                            continue
                        v = vals[k]
                        x = rows[row, cols[k]]
                        if bound_by[v] >= 0:
                            if value[v] != x:
                                ok = False
                                break
                        else:
                            bound_by[v] = s
                            value[v] = x
                    if ok:
                        found = True
                        break
                    for v in range(n_vars):
                        if bound_by[v] == s:
                            bound_by[v] = -1
            c += 1
        if found:
            choice[s] = c
            if s == n_steps - 1:
                return True
            s += 1
            choice[s] = lo - 1
        else:
            s -= 1
    return False


@numba.njit(cache=True)
def _match_windows(rows, masks, starts, stops, group, ptr, cols, kinds, vals,
                   n_vars):  # pragma: no cover - compiled
    n_steps = len(group)
    full = (np.int64(1) << n_steps) - 1
    cap = 16
    out_win = np.empty(cap, dtype=np.int64)
    out_pos = np.empty((cap, n_steps), dtype=np.int64)
    n_out = 0
    choice = np.empty(n_steps, dtype=np.int64)
    cand = np.empty(0, dtype=np.int64)
    for w in range(len(starts)):
        a, b = starts[w], stops[w]
        seen = np.int64(0)
        m = 0
        for i in range(a, b):
            if masks[i] != 0:
                seen |= masks[i]
                m += 1
        if seen != full:  # some step has no row: nothing to search
            continue
        if len(cand) < m:
            cand = np.empty(2 * m, dtype=np.int64)
        m = 0
        for i in range(a, b):
            if masks[i] != 0:
                cand[m] = i
                m += 1
        # earliest end E(s) of an occurrence within cand[s..]: non-decreasing in s
        ends = np.full(m, -1, dtype=np.int64)
        e = 0
        for s in range(m):
            if e < s:
                e = s
            while e < m and not _search(rows, masks, cand, s, e, group, ptr, cols, kinds,
                                        vals, n_vars, choice):
                e += 1
            if e == m:
                break
            ends[s] = e
        for s in range(m):
            if ends[s] < 0:
                break
            if s + 1 < m and ends[s + 1] == ends[s]:
                continue  # a shorter interval [s+1, E(s)] holds an occurrence: not minimal
            _search(rows, masks, cand, s, ends[s], group, ptr, cols, kinds, vals, n_vars,
                    choice)
            if n_out == cap:
                cap *= 2
                new_win = np.empty(cap, dtype=np.int64)
                new_pos = np.empty((cap, n_steps), dtype=np.int64)
                new_win[:n_out] = out_win[:n_out]
                new_pos[:n_out] = out_pos[:n_out]
                out_win, out_pos = new_win, new_pos
            out_win[n_out] = w
            for t in range(n_steps):
                out_pos[n_out, t] = cand[choice[t]] - a
            n_out += 1
    return out_win[:n_out], out_pos[:n_out]
