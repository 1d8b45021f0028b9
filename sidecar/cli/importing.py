"""``memsidecar import FILE.jsonl|-``: one memory per line over ImportMemoriesStream.

Exit status: 0 when every line was stored or deduplicated, 1 when some were rejected (the
summary on stderr names each line and why), 2 on a usage or connection error."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from sidecar.cli import remote
from sidecar.cli.args import integer
from sidecar.story import plural

if TYPE_CHECKING:
    from memsidecar.v1 import store_pb2

MAX_BATCH = 100  # memsidecar_client.importing.MAX_BATCH (tested equal)


@dataclass
class Lines:
    """The parsed file: items to send with their line numbers, and lines that did not parse."""

    items: list[Any] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    bad: list[tuple[int, str]] = field(default_factory=list)  # (line, reason)


@dataclass
class Summary:
    lines: int
    stored: int = 0
    deduplicated: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (line, reason)
    acknowledged: int = 0


def add(parser: argparse.ArgumentParser) -> None:
    remote.add_options(parser)
    parser.add_argument("file", help="FILE.jsonl, or - for standard input")
    parser.add_argument("--batch-size", type=integer(1, MAX_BATCH), default=MAX_BATCH,
                        help=f"items per acknowledged batch, 1..{MAX_BATCH} (default {MAX_BATCH})")
    remote.add_progress_flag(parser)
    parser.set_defaults(run=run)


def parse(lines: Iterable[str]) -> Lines:
    from memsidecar_client import item_from_dict
    from memsidecar_client.records import parse_line

    parsed = Lines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            parsed.items.append(item_from_dict(parse_line(line)))
            parsed.numbers.append(number)
        except ValueError as err:
            parsed.bad.append((number, f"BAD_LINE: {err}"))
    return parsed


def run(args: argparse.Namespace) -> int:
    from memsidecar_client import MemsidecarError, RetryPolicy

    # A sidecar restarting (model load, index) may take a while: keep resending for ~1 minute.
    resume = RetryPolicy(max_attempts=20, initial_backoff_s=0.2, max_backoff_s=5.0)
    parsed = _read(args.file)
    summary = Summary(lines=len(parsed.items) + len(parsed.bad), rejected=list(parsed.bad))
    with remote.connect(args) as client, \
            remote.progress(len(parsed.items), "mem", args.progress) as bar:
        try:
            for ack in client.import_stream(parsed.items, batch_size=args.batch_size,
                                            timeout_s=None, retry=resume):
                _count(summary, ack, parsed.numbers, ack.sequence * args.batch_size)
                bar.update(ack.committed + ack.deduplicated + ack.rejected)
        except MemsidecarError as err:
            bar.close()
            report(summary, sys.stderr)
            print(f"memsidecar import: {err}; {summary.acknowledged} of {len(parsed.items)} "
                  "items were acknowledged (committed); run the same import again to finish: "
                  "lines with an id are not stored twice", file=sys.stderr)
            return 2
    report(summary, sys.stderr)
    return 1 if summary.rejected else 0


def _read(name: str) -> Lines:
    if name == "-":
        return parse(sys.stdin)
    with open(name, encoding="utf-8") as lines:
        return parse(lines)


def _count(summary: Summary, ack: store_pb2.ImportBatchAck, numbers: list[int],
           first: int) -> None:
    """Add a batch's acknowledgement; ``numbers[first + i]`` is the line of its item i."""
    summary.stored += ack.committed
    summary.deduplicated += ack.deduplicated
    summary.acknowledged += ack.committed + ack.deduplicated + ack.rejected
    for error in ack.errors:
        message = error.message.replace(f"items[{error.index}].", "")
        summary.rejected.append((numbers[first + error.index], f"{error.reason}: {message}"))


def report(summary: Summary, out: TextIO) -> None:
    print(f"{plural(summary.lines, 'line')}: {summary.stored} stored, {summary.deduplicated} "
          f"deduplicated, {len(summary.rejected)} rejected", file=out)
    for number, reason in sorted(summary.rejected):
        print(f"  line {number}: {reason}", file=out)
