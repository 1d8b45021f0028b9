"""The README's command list: it names every subcommand, each line parses with the flags it
shows, and the lines that need no PostgreSQL run for real (health against a real sidecar)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from sidecar.cli.main import COMMANDS, _parser, main
from tests.clients.test_readme_examples import fenced
from tests.conftest import Running

PROGRAM = ".venv/bin/memsidecar "


def command_lines() -> list[str]:
    (block,) = [body for body in fenced("sh") if PROGRAM + "serve " in body]
    return [line.removeprefix(PROGRAM) for line in block.splitlines()]


def test_the_list_names_every_subcommand() -> None:
    text = " ".join(command_lines())
    words = set(re.findall(r"[a-z]+(?:-[a-z]+)*", text))
    assert set(COMMANDS) <= words, set(COMMANDS) - words
    assert {"list", "revoke"} <= words  # token's other subcommands


def argv(line: str, values: dict[str, str]) -> list[str]:
    """The line's command with its placeholders filled and its optional flags given."""
    command = line.split("  #")[0].replace("[", "").replace("]", "")
    return [values.get(word, word) for word in shlex.split(command)]


def test_each_line_parses_and_runs(running: Running, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    config, memories = tmp_path / "memsidecar.toml", tmp_path / "memories.jsonl"
    config.write_text('[server]\nlisten = "127.0.0.1:50051"\n')
    memories.write_text(json.dumps({"content": "Billing runs PostgreSQL 16", "type": "fact"}))
    values = {"FILE": str(config), "FILE.jsonl": str(memories), "DIR": str(tmp_path / "data"),
              "NAME": "ada", "ADDR": running.target, "sqlite:DIR": f"sqlite:{tmp_path}/data"}
    ran = []
    for line in command_lines():
        args = argv(line, values)
        _parser(args[0]).parse_args(args)  # every flag shown exists (SystemExit otherwise)
        if args[0] in ("serve", "migrate"):  # runs in tests/test_cli.py, tests/pg
            continue
        if args[0] == "import":
            args += ["--addr", running.target]
        assert main(args) == 0, capsys.readouterr().err
        ran.append(args[0])
    assert ran == ["health", "config", "token", "import"]
    assert "SERVING" in capsys.readouterr().out
