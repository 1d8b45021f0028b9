"""The README's examples, executed against a real sidecar on a fresh data dir.

Every ```python block and every ```sh block that calls grpcurl runs as written (only the
address is pointed at the test server); the ```go block is the Go module's quickstart
(clients/go/examples/quickstart/main.go, byte for byte), built by `make go-client` and given the
address as its argument. Each runs twice on one growing store and in both orders, and must print
an injection block that carries the decision it stored.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.clients.agent_loops import ROOT
from tests.conftest import Running

README = ROOT / "README.md"
ADDRESS = "127.0.0.1:50051"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
BLOCK_FIELD = re.compile(r'"block": ("(?:[^"\\]|\\.)*")')
EXPECTED = "PostgreSQL 16"  # the decision the grpcurl and Python examples store
GO_QUICKSTART = ROOT / "clients" / "go" / "examples" / "quickstart" / "main.go"
GO_EXPECTED = "keeps its notes in PostgreSQL"  # the one the Go quickstart stores

Example = Callable[[], str]  # runs the example, returns what it printed


def fenced(language: str, containing: str = "") -> list[str]:
    text = README.read_text(encoding="utf-8")
    return [body for lang, body in FENCE.findall(text) if lang == language and containing in body]


def run(args: list[str], stdin: str | None = None) -> str:
    done = subprocess.run(args, cwd=ROOT, input=stdin, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"{args[0]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def grpcurl_example(body: str, target: str) -> Example:
    def execute() -> str:
        out = run(["bash", "-euo", "pipefail", "-s"], stdin=body.replace(ADDRESS, target))
        blocks = [json.loads(raw) for raw in BLOCK_FIELD.findall(out)]
        assert blocks, f"no Inject reply in:\n{out}"
        return str(blocks[-1])
    return execute


def python_example(body: str, target: str, path: Path) -> Example:
    path.write_text(body.replace(ADDRESS, target), encoding="utf-8")
    return lambda: run([sys.executable, str(path)])


def go_example(body: str, target: str, built: Path) -> Example:
    assert body == GO_QUICKSTART.read_text(encoding="utf-8"), (
        "the README's Go block must be clients/go/examples/quickstart/main.go byte for byte")
    return lambda: run([str(built / "quickstart"), target])


def test_readme_has_one_example_per_client() -> None:
    assert len(fenced("sh", "$G ")) == 1
    assert len(fenced("python")) == 1
    assert len(fenced("go")) == 1


def test_readme_python_blocks_are_whole_programs() -> None:
    for body in fenced("python"):
        assert ">>>" not in body and "\n..." not in body and "# ..." not in body
        compile(body, "README.md", "exec")


@pytest.fixture
def examples(grpcurl: Path, go_built: Path, running: Running, tmp_path: Path,
             ) -> dict[str, Example]:
    """Every README example, ready to run against ``running`` (grpcurl and the Go client's
    programs built by their fixtures)."""
    del grpcurl
    target = running.target
    found: dict[str, Example] = {}
    for n, body in enumerate(fenced("sh", "$G ")):
        found[f"grpcurl-{n}"] = grpcurl_example(body, target)
    for n, body in enumerate(fenced("python")):
        found[f"python-{n}"] = python_example(body, target, tmp_path / f"readme_{n}.py")
    for n, body in enumerate(fenced("go")):
        found[f"go-{n}"] = go_example(body, target, go_built)
    return found


def test_readme_examples_run_twice_in_both_orders(examples: dict[str, Example]) -> None:
    names = list(examples)
    for name in [*names, *reversed(names)]:
        out = examples[name]()
        expected = GO_EXPECTED if name.startswith("go-") else EXPECTED
        assert "[Context from memory]" in out and expected in out, f"{name} printed:\n{out}"


def test_readme_points_at_the_three_agent_loop_templates(go_built: Path,
                                                         rust_built: Path) -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Use it from your agent"):text.index("## The API")]
    for template in ("clients/python/examples/agent_loop.py", "build/go/agent-loop",
                     "build/rust/agent-loop"):
        assert f"`{template}`" in section and (ROOT / template).is_file(), template
