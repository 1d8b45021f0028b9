"""Settings over real gRPC: defaults, overrides, reset, validation, the file, hot reload."""

from __future__ import annotations

import threading
import tomllib
from dataclasses import fields
from pathlib import Path

import grpc
import pytest
from memsidecar.v1 import settings_pb2 as pb

from sidecar.injection.config import MemoryInjectionConfig
from tests.conftest import Running
from tests.waiting import wait_for

DEFAULTS = MemoryInjectionConfig()


def config_path(running: Running) -> Path:
    return Path(running.server.app.config.data_dir) / "memsidecar.toml"


def update(running: Running, agent_id: str = "", reset: bool = False,
           **fields_: object) -> pb.GetConfigResponse:
    return running.settings.UpdateConfig(pb.UpdateConfigRequest(
        agent_id=agent_id, memory_injection=pb.MemoryInjectionConfig(**fields_),
        reset_memory_injection_override=reset))


def test_get_defaults_and_unknown_agents(running: Running) -> None:
    for agent_id in ("", "never-configured"):
        reply = running.settings.GetConfig(pb.GetConfigRequest(agent_id=agent_id))
        assert reply.agent_id == agent_id
        assert not reply.memory_injection_overridden
        mi = reply.memory_injection
        for f in fields(DEFAULTS):
            if f.name != "pinned_types":
                assert mi.HasField(f.name), f.name  # every field set
        assert mi.search_limit == DEFAULTS.search_limit
        assert mi.pinned_sort == DEFAULTS.pinned_sort
        assert list(mi.pinned_types) == []
        assert mi.semantic_threshold == pytest.approx(DEFAULTS.semantic_threshold)
    assert not config_path(running).exists()  # no file, built-in defaults


def test_override_then_reset_through_the_file(running: Running) -> None:
    reply = update(running, "assistant", pinned_types=["todo", "goal"], ambient_enabled=True,
                   semantic_threshold=0.9)
    assert reply.memory_injection_overridden
    assert list(reply.memory_injection.pinned_types) == ["todo", "goal"]
    assert reply.memory_injection.search_limit == DEFAULTS.search_limit  # inherited
    data = tomllib.loads(config_path(running).read_text())  # created in DATA_DIR
    assert data == {"agents": [{"id": "assistant", "memory_injection": {
        "pinned_types": ["todo", "goal"], "ambient_enabled": True, "semantic_threshold": 0.9}}]}

    update(running, "", search_limit=7)  # the defaults change; the override inherits it
    got = running.settings.GetConfig(pb.GetConfigRequest(agent_id="assistant"))
    assert got.memory_injection.search_limit == 7 and got.memory_injection_overridden
    other = running.settings.GetConfig(pb.GetConfigRequest(agent_id="other"))
    assert other.memory_injection.search_limit == 7 and not other.memory_injection_overridden
    assert list(other.memory_injection.pinned_types) == []

    reply = update(running, "assistant", reset=True)
    assert not reply.memory_injection_overridden
    assert list(reply.memory_injection.pinned_types) == []
    assert reply.memory_injection.search_limit == 7
    data = tomllib.loads(config_path(running).read_text())
    assert "agents" not in data and data["defaults"]["memory_injection"] == {"search_limit": 7}


def test_clearing_a_list_needs_the_flag(running: Running) -> None:
    update(running, "a", pinned_types=["todo"])
    reply = update(running, "a", search_limit=5)  # empty list without the flag: unchanged
    assert list(reply.memory_injection.pinned_types) == ["todo"]
    reply = update(running, "a", pinned_types=[], set_pinned_types=True)
    assert list(reply.memory_injection.pinned_types) == []


@pytest.mark.parametrize(("change", "field"), [
    ({"pinned_sort": "newest"}, "memory_injection.pinned_sort"),
    ({"pinned_types": ["todo", "todos"]}, "memory_injection.pinned_types"),
    ({"semantic_threshold": 1.5}, "memory_injection.semantic_threshold"),
    ({"search_limit": 0}, "memory_injection.search_limit"),
    ({"pinned_source": "vault"}, "memory_injection.pinned_source"),
    ({"ambient_enabled": True, "pinned_types": ["todo", "goal"], "pinned_limit": 20},
     "memory_injection.max_total"),
])
def test_invalid_update_is_invalid_argument_and_changes_nothing(
    running: Running, change: dict[str, object], field: str
) -> None:
    update(running, "agent", search_limit=9)
    before = config_path(running).read_text()
    with pytest.raises(grpc.RpcError) as caught:
        update(running, "agent", **change)
    err = caught.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert dict(err.trailing_metadata())["memsidecar-field"] == field
    assert field.rsplit(".", 1)[-1] in err.details()
    assert config_path(running).read_text() == before
    got = running.settings.GetConfig(pb.GetConfigRequest(agent_id="agent"))
    assert got.memory_injection.search_limit == 9 and got.memory_injection.pinned_sort == "recent"


def test_hand_edit_is_served_and_broken_edit_is_not(running: Running) -> None:
    path = config_path(running)
    update(running, "", search_limit=8)
    path.write_text(path.read_text().replace("search_limit = 8", "search_limit = 15"))
    wait_for(lambda: running.settings.GetConfig(pb.GetConfigRequest()).memory_injection
             .search_limit == 15)
    path.write_text("[defaults.memory_injection]\nsearch_limit = -3\n")
    wait_for(lambda: running.server.app.settings.reloads[1] == 1)  # the watcher rejected it
    assert running.settings.GetConfig(pb.GetConfigRequest()).memory_injection.search_limit == 15
    with pytest.raises(grpc.RpcError) as caught:  # an update would overwrite the operator's edit
        update(running, "", search_limit=3)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "search_limit" in caught.value.details()


def test_concurrent_calls_during_reloads_never_fail(running: Running) -> None:
    path = config_path(running)
    update(running, "a", search_limit=29, max_total=29)
    stop = threading.Event()
    failures: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            try:
                got = running.settings.GetConfig(pb.GetConfigRequest(agent_id="a"))
                mi = got.memory_injection
                if mi.search_limit != mi.max_total:
                    failures.append(f"mixed: {mi.search_limit} / {mi.max_total}")
            except grpc.RpcError as err:
                failures.append(repr(err))

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        for n in (30, 31, 32):
            tmp = path.with_suffix(".new")
            tmp.write_text(f"[[agents]]\nid = \"a\"\n[agents.memory_injection]\n"
                           f"search_limit = {n}\nmax_total = {n}\n")
            tmp.replace(path)
            wait_for(lambda n=n: running.settings.GetConfig(  # type: ignore[misc]
                pb.GetConfigRequest(agent_id="a")).memory_injection.search_limit == n)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert failures == []


def test_agent_sections_are_bounded(running: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sidecar.config.store.MAX_AGENT_SECTIONS", 3)
    for name in ("a1", "a2", "a3"):
        update(running, name, max_total=7)
    with pytest.raises(grpc.RpcError) as err:
        update(running, "a4", max_total=7)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "3 [[agents]] sections" in (err.value.details() or "")
    assert dict(err.value.trailing_metadata())["memsidecar-reason"] == "TOO_MANY_AGENTS"
    assert "a4" not in config_path(running).read_text()
    update(running, "a2", max_total=9)  # an agent already in the file can still change
    update(running, "a3", reset=True)  # and a reset makes room
    update(running, "a4", max_total=7)
