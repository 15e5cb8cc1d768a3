"""What windowkit may replace in an output directory, and how it knows.

An output directory windowkit writes holds two files of its own: ``_windowkit``, the mark
saying that windowkit writes there, and ``_windowkit_parts``, the manifest (JSON) of the parts
it wrote: the folders Spark wrote for it (a command's ``frames`` or ``reports``, a pipeline's
steps, sinks and rejected rows), the streaming checkpoints kept there, and the files it wrote
itself (a report, a CSV of detections), each with its size and modification time.

A part is replaced (``--overwrite``, or a rerun into windowkit's own directory) only when
everything in it is windowkit's:

* a file windowkit wrote itself, unchanged since (same size and modification time);
* under a folder listed as Spark's: Spark's own output files (``part-*``, ``_SUCCESS`` and
  their ``.crc``) in Spark's own folders (``name=value`` such as ``batch=3``, ``_staging``,
  ``_temporary``, ``_spark_metadata``);
* under a folder listed as a checkpoint: Spark's checkpoint (``metadata``, ``offsets``,
  ``commits``, ``sources``, ``state`` and what they hold).

Any other file makes the run refuse, in one line naming that file, before Spark starts. A
directory marked ``_windowkit`` without a manifest (written before windowkit kept one) is
judged by names alone: a folder holding only Spark's own files (or a checkpoint's) counts as
windowkit's; a file windowkit would write itself is not replaced, the run refuses until it is
moved away. A directory without the mark holds nothing of windowkit's.
"""

from __future__ import annotations

import json
import os
import re
import tempfile

#: A file windowkit leaves in every output directory it writes, so that it recognises its own.
OUTPUT_MARK = "_windowkit"
#: The manifest of the parts windowkit wrote in an output directory, beside the mark.
MANIFEST = "_windowkit_parts"
#: Kinds of part: a folder Spark writes, a streaming checkpoint, a file windowkit writes.
SPARK, CHECKPOINT, FILE = "spark", "checkpoints", "files"

_SPARK_WORK_DIRS = ("_temporary", "_spark_metadata")  # whatever they hold is Spark's
_PARTITION_DIR = re.compile(r"[^=]+=[^=]*")
_CHECKPOINT_NAMES = ("metadata", "offsets", "commits", "sources", "state")


def is_spark_file(relative: str) -> bool:
    """Whether a path inside a folder Spark wrote has the name of one of Spark's own files.

    Examples
    --------
    >>> is_spark_file("batch=3/part-00000-1b2c.snappy.parquet"), is_spark_file("._SUCCESS.crc")
    (True, True)
    >>> is_spark_file("notes.txt"), is_spark_file("batch=3/notes.txt")
    (False, False)
    """
    *folders, name = relative.split("/")
    for folder in folders:
        if folder in _SPARK_WORK_DIRS:
            return True
        if folder != "_staging" and not _PARTITION_DIR.fullmatch(folder):
            return False
    return _spark_name(name)


def _spark_name(name: str) -> bool:
    if name.startswith(".") and name.endswith(".crc"):
        name = name[1:-4]
    return name.startswith("part-") or name == "_SUCCESS"


def is_checkpoint_file(relative: str) -> bool:
    """Whether a path inside a streaming checkpoint folder is one of Spark's.

    Examples
    --------
    >>> is_checkpoint_file("offsets/0"), is_checkpoint_file(".metadata.crc")
    (True, True)
    >>> is_checkpoint_file("notes.txt")
    False
    """
    top = relative.split("/")[0]
    if top.startswith(".") and top.endswith(".crc"):
        top = top[1:-4]
    return top in _CHECKPOINT_NAMES


_RULES = {SPARK: is_spark_file, CHECKPOINT: is_checkpoint_file}


# -------------------------------------------------------------------------------- manifest
def read_manifest(output: str) -> dict | None:
    """The manifest of ``output`` (``{"spark": [...], "checkpoints": [...], "files": {...}}``),
    or None where windowkit kept none there.

    Examples
    --------
    >>> read_manifest(tempfile.mkdtemp()) is None
    True
    """
    try:
        with open(os.path.join(output, MANIFEST), encoding="utf-8") as handle:
            found = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict):
        return None
    return {SPARK: list(found.get(SPARK, [])), CHECKPOINT: list(found.get(CHECKPOINT, [])),
            FILE: dict(found.get(FILE, {}))}


def _write_manifest(output: str, manifest: dict) -> None:
    # written whole then renamed: a crash never leaves half a manifest
    fd, temporary = tempfile.mkstemp(prefix=f".{MANIFEST}.", dir=output)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=1, sort_keys=True)
    os.replace(temporary, os.path.join(output, MANIFEST))


def _relative(part: str) -> str:
    return os.path.normpath(part).replace(os.sep, "/")


def record_part(output: str, part: str, kind: str = SPARK) -> None:
    """Add ``part`` (a path relative to ``output``) to the manifest, as a folder Spark writes,
    a checkpoint or (after writing it) a file windowkit wrote itself.

    Examples
    --------
    >>> out = tempfile.mkdtemp()
    >>> record_part(out, "reports")
    >>> _ = open(os.path.join(out, "a.csv"), "w").write("x\\n")
    >>> record_part(out, "a.csv", FILE)
    >>> read_manifest(out)[SPARK], list(read_manifest(out)[FILE])
    (['reports'], ['a.csv'])
    """
    manifest = read_manifest(output) or {SPARK: [], CHECKPOINT: [], FILE: {}}
    name = _relative(part)
    if kind == FILE:
        stat = os.stat(os.path.join(output, part))
        manifest[FILE][name] = [stat.st_size, stat.st_mtime_ns]
    elif name not in manifest[kind]:
        manifest[kind] = sorted([*manifest[kind], name])
    _write_manifest(output, manifest)


# ------------------------------------------------------------------------------ ownership
def foreign_file(output: str, part: str, kind: str = SPARK) -> str | None:
    """The first file under ``part`` of ``output`` that windowkit did not write (its path
    relative to ``output``), or None when windowkit may replace the part.

    Examples
    --------
    >>> out = tempfile.mkdtemp()
    >>> open(os.path.join(out, OUTPUT_MARK), "w").close()
    >>> os.makedirs(os.path.join(out, "reports", "batch=0"))
    >>> _ = open(os.path.join(out, "reports", "batch=0", "part-0.parquet"), "w").write("x")
    >>> foreign_file(out, "reports") is None
    True
    >>> _ = open(os.path.join(out, "reports", "notes.txt"), "w").write("mine")
    >>> foreign_file(out, "reports")
    'reports/notes.txt'
    """
    root = os.path.join(output, part)
    if not os.path.lexists(root):
        return None
    manifest = read_manifest(output)
    legacy = manifest is None and os.path.exists(os.path.join(output, OUTPUT_MARK))
    for path in _files_under(root):
        relative = _relative(os.path.relpath(path, output))
        if not _owned(output, relative, manifest, legacy, _relative(part), kind):
            return relative
    return None


def _files_under(root: str) -> list[str]:
    if os.path.islink(root) or not os.path.isdir(root):
        return [root]
    found = []
    for folder, dirs, files in os.walk(root):
        # a link to a folder counts as a file of its own: never followed, never windowkit's
        found += [os.path.join(folder, d) for d in dirs if os.path.islink(os.path.join(folder, d))]
        found += [os.path.join(folder, f) for f in files]
    return sorted(found)


def _owned(output: str, relative: str, manifest: dict | None, legacy: bool, part: str,
           kind: str) -> bool:
    if os.path.islink(os.path.join(output, relative)):
        return False
    if manifest is not None and relative in manifest[FILE]:
        stat = os.stat(os.path.join(output, relative))
        return manifest[FILE][relative] == [stat.st_size, stat.st_mtime_ns]
    if legacy:
        rule = _RULES.get(kind)
        return rule is not None and relative != part and rule(relative[len(part) + 1:])
    for listed_kind, rule in _RULES.items():
        for folder in (manifest or {}).get(listed_kind, ()):
            if relative.startswith(folder + "/"):
                return rule(relative[len(folder) + 1:])
    return False


def check_part(output: str, part: str, kind: str = SPARK, option: str = "`--output`") -> None:
    """Raise ``ValueError`` naming the file if ``part`` of ``output`` holds one windowkit did
    not write (see the module's docstring).

    Examples
    --------
    >>> out = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(out, "frames"))
    >>> _ = open(os.path.join(out, "frames", "notes.txt"), "w").write("mine")
    >>> check_part(out, "frames")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `--output` ...: frames/notes.txt is not a file windowkit wrote, and this run ...
    """
    found = foreign_file(output, part, kind)
    if found is not None:
        msg = (f"{option} {output}: {found} is not a file windowkit wrote, and this run "
               f"replaces {_relative(part)}; move it away or choose another output")
        raise ValueError(msg)


def claim_part(output: str, part: str, kind: str = SPARK) -> str:
    """Check that windowkit may replace ``part`` of ``output``, record it in the manifest and
    return its path: call it just before writing a folder Spark writes or a checkpoint.

    Examples
    --------
    >>> out = tempfile.mkdtemp()
    >>> claim_part(out, "frames") == os.path.join(out, "frames"), read_manifest(out)[SPARK]
    (True, ['frames'])
    """
    check_part(output, part, kind)
    record_part(output, part, kind)
    return os.path.join(output, part)


def remove_part(output: str, part: str, kind: str = SPARK, option: str = "`--output`") -> None:
    """Delete ``part`` of ``output`` if everything in it is windowkit's; raise otherwise.

    Examples
    --------
    >>> out = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(out, "_checkpoints", "f", "offsets"))
    >>> record_part(out, "_checkpoints/f", CHECKPOINT)
    >>> remove_part(out, "_checkpoints/f", CHECKPOINT)
    >>> os.path.exists(os.path.join(out, "_checkpoints", "f"))
    False
    """
    import shutil

    check_part(output, part, kind, option)
    path = os.path.join(output, part)
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)
