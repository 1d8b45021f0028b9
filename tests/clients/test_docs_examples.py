"""Each client example in docs/clients.md runs against a real sidecar, twice."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clients.agent_loops import BLOCK_PREFIX, ROOT
from tests.conftest import Running

DOC = ROOT / "docs" / "clients.md"


def block(language: str) -> str:
    found = re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(found) == 1, f"expected one {language} block in {DOC}"
    return str(found[0])


def check_runs_twice(command: list[str], stdin: str | None, answer: str) -> None:
    for _ in range(2):
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(BLOCK_PREFIX) and answer in done.stdout, done.stdout


def test_python_example(running: Running) -> None:
    check_runs_twice([sys.executable, "-", running.target], block("python"), "deploys on Fridays")


@pytest.mark.parametrize(("language", "source", "built", "answer"), [
    ("go", "clients/go/examples/quickstart/main.go", "go_built", "keeps its notes in PostgreSQL"),
    ("rust", "clients/rust/examples/quickstart.rs", "rust_built", "written to S3 every night"),
])
def test_compiled_example(running: Running, request: pytest.FixtureRequest, language: str,
                          source: str, built: str, answer: str) -> None:
    """The doc's block is the example file byte for byte; the build compiles that file."""
    assert block(language) == (ROOT / source).read_text()
    folder: Path = request.getfixturevalue(built)
    check_runs_twice([str(folder / "quickstart"), running.target], None, answer)
