"""Results files of the benchmarks, stamped so a figure can be traced to its run.

``write_results(name, payload)`` writes ``bench/results/<name>.md`` (markdown) or ``<name>.json``
(a mapping), with the UTC date, the git commit (``-dirty`` when the tree has changes), the
command line and the load average. ``recorded(name)`` wraps a benchmark's ``main()``: what it
prints still goes to the terminal and is also written as ``<name>.md``. The folder is
git-ignored; docs/benchmarks.md lists which bench writes which file.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, redirect_stdout
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def stamp() -> dict[str, object]:
    """When, on which code and under which load a result was measured."""
    commit = _git("rev-parse", "--short=12", "HEAD") or "unknown"
    if _git("status", "--porcelain", "--untracked-files=no"):
        commit += "-dirty"
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }


def write_results(name: str, payload: str | Mapping[str, object]) -> Path:
    """Write one benchmark's results with its stamp; returns the file written."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = stamp()
    if isinstance(payload, str):
        path = RESULTS / f"{name}.md"
        header = "\n".join(f"- {key}: {value}" for key, value in meta.items())
        path.write_text(f"# {name}\n\n{header}\n\n{payload.rstrip()}\n", encoding="utf-8")
    else:
        path = RESULTS / f"{name}.json"
        path.write_text(json.dumps({"meta": meta, "results": payload}, indent=2) + "\n",
                        encoding="utf-8")
    return path


class _Tee(io.TextIOBase):
    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


@contextmanager
def recorded(name: str) -> Iterator[None]:
    """Tee stdout; when the block finishes without error, write it as ``<name>.md``."""
    captured = io.StringIO()
    with redirect_stdout(_Tee(sys.stdout, captured)):  # type: ignore[type-var]
        yield
    path = write_results(name, f"```\n{captured.getvalue().rstrip()}\n```")
    print(f"results: {path}")
