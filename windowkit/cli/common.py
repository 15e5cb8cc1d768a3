"""Options and helpers shared by the subcommands: input formats, master, progress."""

from __future__ import annotations

import argparse
import sys
import time

FORMATS = ("csv", "json", "parquet")


def add_io_arguments(parser: argparse.ArgumentParser, stream: bool = True) -> None:
    """Add ``--input``, ``--format``, ``--output``, ``--master`` and the streaming options.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_io_arguments(p)
    >>> p.parse_args(["--input", "in", "--output", "out"]).format
    'parquet'
    """
    parser.add_argument("--input", required=True, help="input file or directory")
    parser.add_argument("--format", choices=FORMATS, default="parquet", help="input format")
    parser.add_argument("--output", required=True, help="output directory (Parquet)")
    parser.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    if stream:
        parser.add_argument("--stream", action="store_true",
                            help="run as Structured Streaming over the files in --input")
        parser.add_argument("--checkpoint", default=None,
                            help="checkpoint directory (required with --stream)")
        parser.add_argument("--max-files-per-trigger", type=int, default=1,
                            help="files per micro-batch with --stream")
        parser.add_argument("--late", default="1 minute",
                            help="how late a row may arrive with --stream (watermark delay)")


def read_input(spark, args: argparse.Namespace, schema=None):
    """Read ``args.input`` as a batch or (with ``--stream``) a streaming DataFrame.

    CSV and JSON are read permissively: a malformed line keeps its text in
    ``_corrupt_record`` so that it can be set aside rather than lost.
    """
    if getattr(args, "stream", False):
        if not args.checkpoint:
            msg = "`--checkpoint` is required with `--stream`"
            raise ValueError(msg)
        if schema is None:
            schema = _read(spark.read, args, None).schema
        reader = spark.readStream.option("maxFilesPerTrigger", args.max_files_per_trigger)
        return _read(reader, args, schema)
    return _read(spark.read, args, schema)


def _read(reader, args, schema):
    if schema is not None:
        reader = reader.schema(schema)
    if args.format == "csv":
        reader = reader.option("header", "true").option("mode", "PERMISSIVE")
        if schema is None:
            reader = reader.option("inferSchema", "true")
        return reader.csv(args.input)
    if args.format == "json":
        return reader.option("mode", "PERMISSIVE").json(args.input)
    return reader.parquet(args.input)


class Progress:
    """One line per step with elapsed seconds, on stderr (visible progress on long runs).

    Examples
    --------
    >>> p = Progress(stream=sys.stdout)
    >>> p.step("reading")  # doctest: +ELLIPSIS
    [windowkit ...s] reading
    """

    def __init__(self, stream=None) -> None:
        self.t0 = time.perf_counter()
        self.stream = stream or sys.stderr

    def step(self, message: str) -> None:
        elapsed = time.perf_counter() - self.t0
        print(f"[windowkit {elapsed:6.1f}s] {message}", file=self.stream, flush=True)
