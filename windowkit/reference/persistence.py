"""Brute-force persistence: the oracle for ``windowkit.core.persistence``.

Written straight from the definitions of the persistent-items paper (Lahiri, Tirthapura,
Chandrashekar), with Python sets and dicts, one row at a time. It is meant to be obviously
right, not fast.

* Definition 2.1: the persistence ``p_d(l, r)`` of item ``d`` over the window ``[l, r]`` is the
  number of distinct slots ``t`` with ``l <= t <= r`` in which ``d`` appears.
* Definition 2.2: ``d`` is alpha-persistent in ``[l, r]`` when ``p_d(l, r) >= alpha (r-l+1)``.
* Algorithms 2-3 (fixed window) and 5-7 (sliding window) are transcribed literally, with the
  hash ``h(d, t) -> [0, 1)`` passed in, so the fast code can be checked tuple by tuple.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from fractions import Fraction

Stream = Iterable[tuple[Hashable, int]]


def persistence(stream: Stream, left: int, right: int) -> dict[Hashable, int]:
    """``p_d(left, right)`` for every item appearing in ``[left, right]`` (Definition 2.1).

    Examples
    --------
    >>> persistence([("a", 1), ("a", 1), ("b", 2), ("a", 3), ("a", 9)], 1, 5)
    {'a': 2, 'b': 1}
    """
    slots: dict[Hashable, set[int]] = {}
    for item, slot in stream:
        if left <= slot <= right:
            slots.setdefault(item, set()).add(slot)
    return {item: len(s) for item, s in slots.items()}


def persistent_items(
    stream: Stream, alpha: float | Fraction, left: int, right: int
) -> set[Hashable]:
    """Items that are alpha-persistent in ``[left, right]`` (Definition 2.2).

    ``alpha`` is compared exactly: pass a ``Fraction`` (or a decimal string's float, which is
    converted through its shortest repr) so that ``alpha * n`` is not rounded.

    Examples
    --------
    >>> sorted(persistent_items([(1, 0), (1, 1), (2, 1)], 0.5, 0, 3))
    [1]
    """
    bound = _exact(alpha) * (right - left + 1)
    return {d for d, p in persistence(stream, left, right).items() if p >= bound}


def _exact(x: float | Fraction) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(repr(x))


def paper_fixed_sketch(
    stream: Sequence[tuple[Hashable, int]],
    h: Callable[[Hashable, int], float],
    tau: float,
) -> dict[Hashable, tuple[int, int]]:
    """Algorithm 2 verbatim: the sketch ``{d: (n_d, t_d)}`` after the stream.

    Examples
    --------
    >>> paper_fixed_sketch([(1, 0), (1, 0), (1, 2)], lambda d, t: 0.0, 0.5)
    {1: (2, 2)}
    """
    sketch: dict[Hashable, list[int]] = {}
    for d, t in stream:
        if d in sketch:
            if sketch[d][1] < t:
                sketch[d][0] += 1
                sketch[d][1] = t
        elif h(d, t) < tau:
            sketch[d] = [1, t]
    return {d: (v[0], v[1]) for d, v in sketch.items()}


def paper_fixed_report(
    sketch: dict[Hashable, tuple[int, int]], tau: float, threshold: float
) -> dict[Hashable, float]:
    """Algorithm 3 verbatim: ``{d: n_d + 1/tau}`` for the tuples with estimate ``>= T``.

    Examples
    --------
    >>> paper_fixed_report({1: (5, 9), 2: (1, 9)}, 0.5, 4.0)
    {1: 7.0}
    """
    out = {}
    for d, (n_d, _) in sketch.items():
        estimate = n_d + 1 / tau
        if estimate >= threshold:
            out[d] = estimate
    return out


def paper_sliding_sketch(
    stream: Sequence[tuple[Hashable, int]],
    h: Callable[[Hashable, int], float],
    tau: float,
    n: int,
    current: int | None = None,
) -> dict[tuple[Hashable, int], tuple[int, int]]:
    """Algorithms 5 and 6 verbatim: ``{(d, t): (n_{d,t}, t_{d,t})}`` at slot ``current``.

    ``current`` defaults to the last slot of the stream; Algorithm 6 runs whenever the slot
    changes (and once more for ``current``).

    Examples
    --------
    >>> paper_sliding_sketch([(1, 0), (1, 1), (1, 2)], lambda d, t: 0.0, 0.5, n=2)
    {(1, 1): (2, 2), (1, 2): (1, 2)}
    """
    sketch: dict[tuple[Hashable, int], list[int]] = {}
    c = None
    for d, t in stream:
        if c is None or t != c:
            c = t
            sketch = {k: v for k, v in sketch.items() if k[1] > c - n}
        if (d, t) in sketch:
            continue
        if h(d, t) < tau:
            sketch[(d, t)] = [1, t]
        for (d2, _t2), v in sketch.items():
            if d2 == d and v[1] < t:
                v[0] += 1
                v[1] = t
    if current is not None:
        sketch = {k: v for k, v in sketch.items() if k[1] > current - n}
    return {k: (v[0], v[1]) for k, v in sketch.items()}


def paper_sliding_report(
    sketch: dict[tuple[Hashable, int], tuple[int, int]],
    tau: float,
    threshold: float,
    n: int,
    current: int,
) -> dict[Hashable, float]:
    """Algorithm 7 verbatim at slot ``current``: ``{d: n_d + 1/tau}`` reported.

    Examples
    --------
    >>> paper_sliding_report({(1, 1): (2, 2), (1, 2): (1, 2)}, 0.5, 3.0, 2, 2)
    {1: 4.0}
    """
    earliest: dict[Hashable, int] = {}
    for d, t in sketch:
        if t >= current - n + 1 and (d not in earliest or t < earliest[d]):
            earliest[d] = t
    out = {}
    for d, t in earliest.items():
        estimate = sketch[(d, t)][0] + 1 / tau
        if estimate >= threshold:
            out[d] = estimate
    return out
