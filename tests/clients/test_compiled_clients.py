"""The agent-loop templates (Go, Rust, Python) and the latency clients against a real
sidecar."""

from __future__ import annotations

import subprocess

import pytest

from tests.clients.agent_loops import (
    BLOCK_PREFIX,
    LANGUAGES,
    ROOT,
    check_loop,
    check_unreachable,
    live_count,
    loop_command,
    run,
)
from tests.clients.conftest import TlsSidecar
from tests.conftest import Running

# language -> (fixture building it, the latency client relative to the repository)
CLIENTS = {"go": ("go_built", "build/go-client"), "rust": ("rust_built", "build/rust/bench")}


@pytest.fixture(params=LANGUAGES)
def template(request: pytest.FixtureRequest) -> tuple[str, list[str]]:
    language = str(request.param)
    return language, loop_command(language, request)


def test_agent_loop_injects_each_turn_and_seeds_once(template: tuple[str, list[str]],
                                                     running: Running) -> None:
    language, command = template
    check_loop(command, running, f"{language}-loop")


def test_agent_loop_seeds_any_agent_and_says_why_a_seed_is_refused(
        template: tuple[str, list[str]], running: Running) -> None:
    """A memory id names one memory of one agent: each agent seeds its own six (AGENT:NAME),
    and a seed the sidecar refuses is printed with its reason."""
    language, command = template
    for agent in ("agent-loop-example", "billing-bot"):
        out = run(command, running.target, "--agent", agent, "--channel", f"{language}-{agent}")
        assert out.code == 0, out.stderr
        assert out.stderr.startswith("seeded 6 memories: 6 stored"), out.stderr
        assert "PostgreSQL" in out.turns()[0].block
    assert live_count(running) == 12
    long = "a" * 250  # a valid agent id, but AGENT:NAME is over the id limit
    out = run(command, running.target, "--agent", long, "--channel", f"{language}-long", stdin="")
    assert out.code == 0, out.stderr
    lines = out.stderr.splitlines()
    assert lines[0] == "seeded 6 memories: 0 stored, 0 already there, 6 rejected", out.stderr
    assert lines[1] == ("seed example-db rejected: INVALID_ARGUMENT: items[0].id has 261 "
                        "characters; at most 256")
    assert len(lines) == 7 and all(" rejected: INVALID_ARGUMENT: " in x for x in lines[1:])


def test_agent_loop_over_a_unix_socket(template: tuple[str, list[str]],
                                       unix_target: str) -> None:
    language, command = template
    for addr in (unix_target, unix_target.replace("unix://", "unix:", 1)):
        out = run(command, addr, "--channel", f"{language}-unix")
        assert out.code == 0, out.stderr
        assert out.turns()[0].block.startswith(BLOCK_PREFIX)


def test_agent_loop_over_tls(template: tuple[str, list[str]], tls_sidecar: TlsSidecar) -> None:
    """--ca: TLS, the sidecar's certificate checked against that CA (another CA: refused)."""
    language, command = template
    out = run(command, tls_sidecar.target, "--channel", f"{language}-tls",
              "--ca", str(tls_sidecar.other_ca), "--wait", "1")
    assert out.code != 0 and "cannot reach the sidecar" in out.stderr.strip().splitlines()[-1]
    out = run(command, tls_sidecar.target, "--channel", f"{language}-tls",
              "--ca", str(tls_sidecar.ca))
    assert out.code == 0, out.stderr
    assert out.turns()[0].block.startswith(BLOCK_PREFIX)


def test_agent_loop_reports_an_unreachable_sidecar(template: tuple[str, list[str]]) -> None:
    check_unreachable(template[1])


@pytest.mark.parametrize("language", sorted(CLIENTS))
def test_latency_client_reports_percentiles(language: str, request: pytest.FixtureRequest,
                                            running: Running) -> None:
    request.getfixturevalue(CLIENTS[language][0])
    binary = ROOT / CLIENTS[language][1]
    done = subprocess.run([str(binary), "--addr", running.target, "--bench", "20"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout
    line = done.stdout.splitlines()[-1]
    assert line.startswith("bench inject n=20 ")
    stats = {k: int(v) for k, v in (part.split("=") for part in line.split()[2:])}
    assert 0 < stats["server_p50_us"] <= stats["p50_us"] <= stats["p99_us"] <= stats["max_us"]
