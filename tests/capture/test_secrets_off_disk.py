"""Secrets typed in a turn or said in a reply leave no byte on disk, whatever ``capture`` is:
the query context keeps no text the PII gate refuses, capture stores none. A real server,
stopped, then every file of its data dir (the database, its WAL, the index files) read as raw
bytes; an ordinary turn and reply are found there, so the scan can see."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from memsidecar.v1 import injection_pb2 as inj

from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.vault.config import VaultConfig
from tests.conftest import Running, settings_for, start_server

AGENT = "support"
# Built at runtime so secret scanners do not flag this file.
CARD = "4111 1111 " + "1111 1111"
PASSWORD = "Tr0ub4dor" + "&3xyz"
GITLAB = "glpat-" + "xY7kQ2mN9pL4vR8tW1zA"
SECRET_TURNS = (
    f"My card is {CARD}, expiry 04/29, please book the flight to Lisbon",
    f"my password is {PASSWORD}",
    f"here is the deploy token {GITLAB} for the staging runner",
)
SECRET_REPLY = f"Noted: the runner's token is {GITLAB}, and I will use it tonight."
NEEDLES = (CARD, CARD.replace(" ", ""), PASSWORD, GITLAB, GITLAB.removeprefix("glpat-"))
ORDINARY_TURN = "The staging database moved to host db-7 in Frankfurt last Tuesday"
ORDINARY_REPLY = "Understood, db-7 in Frankfurt is the staging database from now on."


def _turn(live: Running, text: str, turn: int) -> None:
    live.injection.Inject(inj.InjectRequest(agent_id=AGENT, channel_id="c1", text=text,
                                            turn=turn))


def _prune(live: Running, *messages: tuple[int, str]) -> None:
    live.injection.PruneHistory(inj.PruneHistoryRequest(
        agent_id=AGENT, channel_id="c1",
        messages=[inj.Message(role=role, content=text) for role, text in messages]))


def _files(data_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(data_dir)): p.read_bytes()
            for p in sorted(data_dir.rglob("*")) if p.is_file()}


def _holding(files: dict[str, bytes], text: str) -> list[str]:
    needle = text.encode("utf-8")
    return [name for name, data in files.items() if needle in data]


@pytest.mark.parametrize("capture", ["off", "user", "all"])
def test_secrets_typed_in_turns_leave_no_byte_on_disk(
        capture: str, config: ServerConfig, embedder: Embedder,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    settings = settings_for(config, vault=VaultConfig(),
                            defaults=MemoryInjectionConfig(capture=capture))
    live = start_server(config, embedder, settings)
    try:
        history: list[tuple[int, str]] = []
        for turn, text in enumerate((ORDINARY_TURN, *SECRET_TURNS), start=1):
            _turn(live, text, turn)
            reply = ORDINARY_REPLY if turn == 1 else SECRET_REPLY
            history += [(inj.ROLE_USER, text), (inj.ROLE_ASSISTANT, reply)]
            _prune(live, *history)  # the reply joins the query context (and "all" captures)
        capture_hooks = live.server.app.injector.capture
        assert capture_hooks is not None
        capture_hooks.drain.flush()
        live.server.app.injector.states.writer.flush()
        kept = list(live.server.app.db.execute(
            "SELECT turn, text, reply FROM injection_context ORDER BY turn"))
        # the secret turns are kept without text, as content-free ones: the latest waits for
        # its reply (which finds it), the earlier ones steer nothing and are not kept
        assert kept == [(1, ORDINARY_TURN, ORDINARY_REPLY), (4, "", "")]
        traced = live.server.app.injector.trace.last("c1")  # memory only; shown to operators
        assert [(t.query, t.query_chars) for t in traced] == [
            (ORDINARY_TURN, len(ORDINARY_TURN)), *(("", len(t)) for t in SECRET_TURNS)]
    finally:
        live.close()  # stops the server and closes the store (queued writes written)

    files = _files(Path(config.data_dir))
    assert _holding(files, ORDINARY_TURN) and _holding(files, ORDINARY_REPLY)  # it can see
    for needle in NEEDLES:
        assert _holding(files, needle) == [], f"a secret is on disk (capture={capture})"
    logged = "\n".join(f"{r.getMessage()} {vars(r)}" for r in caplog.records)
    assert not [n for n in NEEDLES if n in logged]


def test_the_query_context_follows_the_pii_gate_switch(config: ServerConfig,
                                                        embedder: Embedder) -> None:
    """With ``vault.pii_gate = false`` the operator takes secrets in: the context keeps them."""
    settings = settings_for(config, vault=VaultConfig(pii_gate=False),
                            defaults=MemoryInjectionConfig())
    live = start_server(config, embedder, settings)
    try:
        _turn(live, SECRET_TURNS[1], 1)
        assert list(live.server.app.db.execute("SELECT text FROM injection_context")) == [
            (SECRET_TURNS[1],)]
    finally:
        live.close()
