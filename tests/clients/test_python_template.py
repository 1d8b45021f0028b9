"""The Python agent-loop template runs wherever it is copied: its example memories are in
the file (the same as the Go and Rust templates' seeds.tsv) and its errors are one line."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

from tests.clients.agent_loops import PYTHON_LOOP, ROOT, check_loop, run
from tests.conftest import Running

SEEDS_TSV = ROOT / "clients" / "go" / "cmd" / "agent-loop" / "seeds.tsv"


def copied(tmp_path: Path) -> Path:
    """The template alone in a folder of its own, away from the repository."""
    folder = tmp_path / "my-agent"
    folder.mkdir()
    return Path(shutil.copy(PYTHON_LOOP, folder / "agent_loop.py"))


def test_the_template_runs_copied_out_of_the_repository(running: Running,
                                                        tmp_path: Path) -> None:
    copy = copied(tmp_path)
    assert ROOT not in copy.resolve().parents
    check_loop([sys.executable, str(copy)], running, "copied-loop", cwd=copy.parent)


def test_its_seeds_are_the_compiled_templates() -> None:
    spec = importlib.util.spec_from_file_location("agent_loop_template", PYTHON_LOOP)
    assert spec is not None and spec.loader is not None
    template = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(template)
    lines = SEEDS_TSV.read_text(encoding="utf-8").splitlines()
    expected = [tuple(line.split("\t", 2)) for line in lines if line and line[0] != "#"]
    assert list(template.SEEDS) == expected and len(expected) == 6


def test_an_unreadable_ca_file_is_one_line(tmp_path: Path) -> None:
    copy = copied(tmp_path)
    missing = tmp_path / "no-such-ca.pem"
    out = run([sys.executable, str(copy)], "127.0.0.1:1", "--ca", str(missing), stdin="")
    assert out.code == 1 and out.stdout == ""
    assert out.stderr == f"agent-loop: --ca {missing}: No such file or directory\n"
