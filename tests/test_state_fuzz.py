"""Corrupt state that passes the checksum is refused, or harmless: never a hang or a crash.

For every class in windowkit's registry, a seeded corpus of edits to the body of a real state
(its example in :mod:`windowkit.testing.contract`, fed two of its batches), each with the
checksum recomputed, must give either the format's error from ``from_bytes`` or an object that
takes the example's last batch and finishes. The only other error allowed is a ``ValueError``
windowkit itself raises about the input (e.g. rows before a corrupted frontier).
The cases of a class run in a forked process watched case by case, so a hang fails the test
(naming the case) instead of hanging the run.
"""

from __future__ import annotations

import multiprocessing
import os
import struct
import zlib

import numpy as np
import pytest

from windowkit.core.registry import state_classes
from windowkit.core.serialization import StateFormatError
from windowkit.testing.contract import EXAMPLES

CASES = 150
#: Seconds one case may take (decoding, one small batch, finish): a hang is far beyond it.
CASE_SECONDS = 20.0
_HEADER = struct.Struct("<4sB8sHIQ")
CLASSES = state_classes()
TAGS = sorted(CLASSES)
EXTREMES = np.array([0, 1, -1, 2, 7, 22, 2**31, 2**40, 2**62, -(2**62), 237494511599638,
                     np.iinfo(np.int64).max, np.iinfo(np.int64).min], dtype=np.int64)


def _state(tag: str) -> bytes:
    ex = EXAMPLES[tag]
    obj = ex.make()
    for batch in ex.batches[:2]:
        ex.feed(obj, batch)
    return obj.to_bytes()


def _edit(blob: bytes, rng: np.random.Generator) -> tuple[bytes, str]:
    """One edit of the body, with the checksum recomputed; and what it did."""
    magic, container, tag, version, _, length = _HEADER.unpack_from(blob)
    body = bytearray(blob[_HEADER.size:])
    (meta_len,) = struct.unpack_from("<I", body)
    arrays_at = 4 + meta_len
    how = rng.choice(["word", "word", "word", "byte", "digit"])
    if how == "digit" or arrays_at >= len(body) - 8:
        digits = [i for i in range(4, arrays_at) if chr(body[i]).isdigit()]
        at = int(rng.choice(digits))
        body[at] = ord(str(rng.integers(0, 10)))
        what = f"meta digit at {at}"
    elif how == "byte":
        at = int(rng.integers(arrays_at, len(body)))
        body[at] = int(rng.integers(0, 256))
        what = f"byte at {at}"
    else:
        at = arrays_at + 8 * int(rng.integers(0, (len(body) - arrays_at) // 8))
        old = struct.unpack_from("<q", body, at)[0]
        near = (old + int(rng.integers(-3, 4)) + 2**63) % 2**64 - 2**63  # int64 wraps
        new = int(rng.choice(EXTREMES)) if rng.random() < 0.5 else near
        struct.pack_into("<q", body, at, new)
        what = f"int64 at {at}: {old} -> {new}"
    header = _HEADER.pack(magic, container, tag, version, zlib.crc32(body), length)
    return header + bytes(body), what


def _outcome(tag: str, blob: bytes) -> str:
    """'refused', 'ran' or 'input error'; anything else raises."""
    ex, cls = EXAMPLES[tag], CLASSES[tag]
    try:
        obj = cls.from_bytes(blob)
    except StateFormatError:
        return "refused"
    try:
        ex.feed(obj, ex.batches[-1])
        ex.finish(obj)
        ex.view(obj)
    except ValueError as exc:
        if type(exc) is ValueError and _raised_by_windowkit(exc):
            return "input error"
        raise
    return "ran"


def _raised_by_windowkit(exc: BaseException) -> bool:
    """Whether windowkit's own code raised ``exc`` (a check of its input), not a library."""
    tb = exc.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return f"{os.sep}windowkit{os.sep}" in tb.tb_frame.f_code.co_filename


def _run_cases(tag: str, blobs: list[bytes], conn) -> None:
    for i, blob in enumerate(blobs):
        conn.send(("start", i, ""))
        try:
            conn.send(("done", i, _outcome(tag, blob)))
        except BaseException as exc:  # reported to the parent, which fails the test
            conn.send(("error", i, f"{type(exc).__name__}: {exc}"))
    conn.send(("end", -1, ""))


@pytest.mark.parametrize("tag", TAGS, ids=[CLASSES[t].__name__ for t in TAGS])
def test_edited_state_is_refused_or_runs_to_the_end(tag):
    rng = np.random.default_rng(sum(map(ord, tag)))
    blob = _state(tag)
    cases = [_edit(blob, rng) for _ in range(CASES)]
    assert _outcome(tag, blob) == "ran"  # compiles what the cases run, before the fork
    parent, child = multiprocessing.get_context("fork").Pipe()
    worker = multiprocessing.get_context("fork").Process(
        target=_run_cases, args=(tag, [c for c, _ in cases], child), daemon=True)
    worker.start()
    outcomes: dict[str, int] = {}
    current = None
    try:
        while True:
            if not parent.poll(CASE_SECONDS):
                where = "before the first case" if current is None else cases[current][1]
                pytest.fail(f"{CLASSES[tag].__name__}: case {current} ({where}) took more "
                            f"than {CASE_SECONDS} s")
            kind, i, text = parent.recv()
            if kind == "start":
                current = i
            elif kind == "error":
                pytest.fail(f"{CLASSES[tag].__name__}: case {i} ({cases[i][1]}): {text}")
            elif kind == "done":
                outcomes[text] = outcomes.get(text, 0) + 1
            else:
                break
    finally:
        worker.kill()
        worker.join()
    assert sum(outcomes.values()) == CASES
    assert outcomes.get("refused", 0) > 0, outcomes
