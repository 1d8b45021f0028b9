"""Every numeric argument of every subcommand is checked by argparse: a value out of range or
not a number ends in the usage line, one error line naming the flag, and exit status 2 (never
a traceback from protobuf, gRPC or logging)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from sidecar.cli import args as types
from sidecar.cli.main import COMMANDS, _parser, main
from tests.clients.agent_loops import ROOT

REMOTE = {"search": ["foo"], "inject": ["--channel", "c", "hi"], "stats": [], "import": ["-"],
          "export": []}
BAD_SECONDS = ["0", "-1", "nan", "inf", "86401", "soon"]
CASES = [
    (["search", "foo", "--limit", "-3"], "--limit: -3 is not in 1..1000"),
    (["search", "foo", "--limit", "5000000000"], "--limit: 5000000000 is not in 1..1000"),
    (["search", "foo", "--limit", "0"], "--limit: 0 is not in 1..1000"),
    (["search", "foo", "--limit", "2.5"], "--limit: '2.5' is not a whole number"),
    (["inject", "--channel", "c", "--turn", "-2", "hi"], "--turn: -2 is not in 0.."),
    (["inject", "--channel", "c", "--turn", str(2**64), "hi"], f"--turn: {2**64} is not in"),
    (["import", "-", "--batch-size", "0"], "--batch-size: 0 is not in 1..100"),
    (["stats", "--log-level", "loud"], "--log-level: 'loud' is not one of DEBUG"),
    (["serve", "--log-level", "chatty"], "--log-level: 'chatty' is not one of DEBUG"),
    *(([name, *rest, "--timeout", value], "--timeout: ")
      for name, rest in REMOTE.items() for value in BAD_SECONDS),
    *((["health", "--timeout", value], "--timeout: ") for value in BAD_SECONDS),
]


@pytest.mark.parametrize(("argv", "message"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_a_bad_number_is_the_usage_line_and_exit_2(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--addr", "127.0.0.1:1"] if argv[0] in REMOTE else argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: memsidecar {argv[0]} ")
    assert f"memsidecar {argv[0]}: error: argument {message}" in err.splitlines()[-1]


def test_the_reported_cases_through_the_console_entry() -> None:
    """As a user runs them: no traceback, the usage line, exit 2."""
    for argv in (["search", "foo", "--limit", "-3"], ["search", "foo", "--limit", "5000000000"],
                 ["inject", "--channel", "c", "--turn", "-2", "hi"]):
        done = subprocess.run([sys.executable, "-m", "sidecar", *argv], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith("usage: ") and done.stdout == ""


def actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Every argument of ``parser`` and of its subcommands, recursively."""
    found = []
    for action in parser._actions:
        found.append(action)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += actions(sub)
    return found


@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_subcommand_takes_an_unchecked_number(name: str) -> None:
    checked = {types.seconds, types.level}
    for action in actions(_parser(name)):
        assert action.type not in (int, float), f"{name} {action.dest}: an unchecked number"
        if action.dest in ("timeout", "log_level"):
            assert action.type in checked, f"{name} {action.dest}"


def test_values_in_range_parse() -> None:
    parsed = _parser("search").parse_args(["search", "x", "--limit", "1000", "--timeout", "0.5",
                                           "--log-level", "debug"])
    assert (parsed.limit, parsed.timeout, parsed.log_level) == (1000, 0.5, "DEBUG")
    turn = _parser("inject").parse_args(["inject", "--channel", "c", "--turn", str(2**64 - 1),
                                         "x"]).turn
    assert turn == 2**64 - 1
