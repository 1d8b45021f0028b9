"""The live store: hot reload, rejecting bad edits, atomic snapshots, UpdateConfig to the file."""

from __future__ import annotations

import logging
import os
import threading
import tomllib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from sidecar.config import ConfigStore, load_text
from sidecar.errors import FailedPrecondition, InvalidArgument
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.records import MemoryType
from tests.waiting import wait_for

BASE = """# operator notes: keep this comment
[server]
listen = "127.0.0.1:7000"  # inline comment

[retrieval]
rrf_k = 42

[defaults.memory_injection]
search_limit = 11  # tuned by hand

[[agents]]
id = "assistant"
# the assistant's own settings
[agents.memory_injection]
pinned_types = ["todo", "goal"]
ambient_enabled = true

[vault]
max_chars = 900
"""


def replace_file(path: Path, text: str) -> None:
    """Write like a careful tool: a temp file renamed over the old one."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write(path: Path, text: str) -> None:
    """Write like an editor that saves in place (same inode, maybe same mtime and size)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "memsidecar.toml"
    path.write_text(BASE, encoding="utf-8")
    return path


@pytest.fixture
def store(config_file: Path) -> Iterator[ConfigStore]:
    live = ConfigStore.open(config_file, required=True)
    yield live
    live.close()


def test_reload_picks_up_an_edit(store: ConfigStore, config_file: Path) -> None:
    store.watch(interval=0.05)
    assert store.injection_for("x").search_limit == 11
    write(config_file, BASE.replace("search_limit = 11", "search_limit = 17"))
    wait_for(lambda: store.injection_for("x").search_limit == 17)
    assert store.injection_for("assistant").search_limit == 17  # inherited by the override


def test_same_size_edit_within_the_same_mtime_is_seen(store: ConfigStore,
                                                      config_file: Path) -> None:
    stat = config_file.stat()
    write(config_file, BASE.replace("search_limit = 11", "search_limit = 12"))
    os.utime(config_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime, same size
    assert store.reload()
    assert store.injection_for("").search_limit == 12


def test_broken_edit_is_rejected_and_the_last_good_config_keeps_serving(
    store: ConfigStore, config_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = store.current
    caplog.set_level(logging.ERROR, logger="sidecar.config.store")
    write(config_file, BASE.replace("search_limit = 11", "search_limit = 0"))
    assert not store.reload()
    assert store.current is good
    assert "defaults.memory_injection.search_limit = 0" in caplog.text
    caplog.clear()
    assert not store.reload()  # the same bad content is not reported again
    assert caplog.text == ""
    write(config_file, "[defaults.memory_injection\n")  # not TOML at all
    assert not store.reload() and store.current is good
    assert "not valid TOML" in caplog.text
    write(config_file, BASE.replace("search_limit = 11", "search_limit = 5"))
    assert store.reload()
    assert store.injection_for("").search_limit == 5


def test_watcher_waits_for_the_content_to_settle(store: ConfigStore, config_file: Path) -> None:
    good = store.current
    write(config_file, "")  # an in-place save caught right after the truncate
    assert not store.reload(settle=True)
    write(config_file, BASE.replace("search_limit = 11", "search_limit = 13"))
    assert not store.reload(settle=True)  # new bytes again: wait for them to settle
    assert store.current is good
    assert store.reload(settle=True)
    assert store.injection_for("").search_limit == 13


def test_removed_file_keeps_the_last_config(store: ConfigStore, config_file: Path) -> None:
    good = store.current
    config_file.unlink()
    assert not store.reload()
    assert store.current is good


def test_server_section_is_not_hot(store: ConfigStore, config_file: Path) -> None:
    write(config_file, BASE.replace("127.0.0.1:7000", "127.0.0.1:7001").replace(
        "rrf_k = 42", "rrf_k = 43"))
    assert store.reload()
    assert store.current.server.listen == "127.0.0.1:7000"
    assert store.current.retrieval.rrf_k == 43


def test_restart_keys_warn_when_the_file_changes_them_not_when_pinned(
        store: ConfigStore, config_file: Path, caplog: pytest.LogCaptureFixture) -> None:
    store.pin_server(replace(store.current.server, listen="127.0.0.1:9999"))  # --listen
    caplog.set_level(logging.WARNING, logger="sidecar.config.store")
    write(config_file, BASE.replace("rrf_k = 42", "rrf_k = 43"))
    assert store.reload()
    assert store.current.server.listen == "127.0.0.1:9999"
    assert not [r for r in caplog.records if "restart" in r.getMessage()]
    write(config_file, BASE.replace("rrf_k = 42", "rrf_k = 44\nbm25_b = 0.9"))
    assert store.reload()
    assert (store.current.retrieval.rrf_k, store.current.retrieval.bm25_b) == (44, 0.5)
    assert [r.getMessage() for r in caplog.records] == [
        "retrieval.bm25_b changed in the file (0.5 -> 0.9); restart to apply it"]


def test_concurrent_readers_never_fail_nor_see_a_half_applied_config(
    store: ConfigStore, config_file: Path
) -> None:
    """Every file written keeps search_limit == max_total == pinned_limit; readers check it."""
    def text(n: int) -> str:
        return (f"[defaults.memory_injection]\nsearch_limit = {n}\nmax_total = {n}\n"
                f"pinned_limit = {n}\n[[agents]]\nid = \"a\"\n[agents.memory_injection]\n"
                f"context_window_depth = {n}\n")

    write(config_file, text(1))
    assert store.reload()
    store.watch(interval=0.01)
    stop = threading.Event()
    failures: list[str] = []
    seen: set[int] = set()

    def reader() -> None:
        while not stop.is_set():
            try:
                snap = store.current
                d, a = snap.defaults, snap.injection_for("a")
                if not (d.search_limit == d.max_total == d.pinned_limit ==
                        a.search_limit == a.context_window_depth):
                    failures.append(f"mixed snapshot: {d} / {a}")
                seen.add(d.search_limit)
            except Exception as err:  # noqa: BLE001 - any failure is the finding
                failures.append(repr(err))

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        for n in range(2, 12):
            replace_file(config_file, text(n))
            wait_for(lambda n=n: store.injection_for("a").search_limit == n)  # type: ignore[misc]
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert failures == []
    assert len(seen) >= 2


# -- UpdateConfig ---------------------------------------------------------------------------


def test_update_round_trips_through_the_file(store: ConfigStore, config_file: Path) -> None:
    config = store.update_injection("assistant", {"max_total": 30, "pinned_sort": "importance"},
                                    reset=False)
    assert config is store.current
    text = config_file.read_text(encoding="utf-8")
    for kept in ("# operator notes: keep this comment", "# inline comment", "# tuned by hand",
                 "# the assistant's own settings", "[vault]\nmax_chars = 900", "rrf_k = 42"):
        assert kept in text
    assert load_text(text) == store.current  # the file is the config
    agent = store.agent("assistant")
    assert dict(agent.overrides or {}) == {
        "pinned_types": (MemoryType.TODO, MemoryType.GOAL), "ambient_enabled": True,
        "max_total": 30, "pinned_sort": "importance"}
    assert not store.reload()  # its own write is not reloaded again


def test_update_new_agent_then_reset_removes_its_section(store: ConfigStore,
                                                         config_file: Path) -> None:
    store.update_injection("bob", {"search_limit": 3}, reset=False)
    data = tomllib.loads(config_file.read_text())
    assert {"id": "bob", "memory_injection": {"search_limit": 3}} in data["agents"]
    assert store.agent("bob").overridden and store.injection_for("bob").search_limit == 3

    store.update_injection("bob", {}, reset=True)
    data = tomllib.loads(config_file.read_text())
    assert [a["id"] for a in data["agents"]] == ["assistant"]
    assert not store.agent("bob").overridden
    assert store.injection_for("bob") == store.current.defaults


def test_reset_then_set_starts_a_fresh_override(store: ConfigStore, config_file: Path) -> None:
    store.update_injection("assistant", {"search_limit": 4}, reset=True)
    assert dict(store.agent("assistant").overrides or {}) == {"search_limit": 4}
    assert "# operator notes" in config_file.read_text()


def test_update_defaults_and_reset_defaults(store: ConfigStore, config_file: Path) -> None:
    store.update_injection("", {"pinned_types": ["decision"], "semantic_threshold": 0.9},
                           reset=False)
    assert store.current.defaults.pinned_types == (MemoryType.DECISION,)
    assert store.injection_for("assistant").pinned_types == (MemoryType.TODO, MemoryType.GOAL)
    assert store.injection_for("assistant").semantic_threshold == 0.9
    store.update_injection("", {}, reset=True)
    assert store.current.defaults == MemoryInjectionConfig()
    assert "defaults" not in tomllib.loads(config_file.read_text())


@pytest.mark.parametrize(("agent_id", "changes", "field"), [
    ("assistant", {"pinned_sort": "newest"}, "memory_injection.pinned_sort"),
    ("assistant", {"pinned_types": ["todo", "nope"]}, "memory_injection.pinned_types"),
    ("assistant", {"semantic_threshold": 2.0}, "memory_injection.semantic_threshold"),
    ("assistant", {"max_total": 5}, "memory_injection.max_total"),  # 3 x 2 pinned slots
    ("", {"search_limit": 0}, "memory_injection.search_limit"),
    ("", {"pinned_limit": 20}, "memory_injection.max_total"),  # breaks the assistant's budget
    ("new", {"bogus": 1}, "memory_injection.bogus"),
    ("  ", {"search_limit": 3}, "agent_id"),
])
def test_invalid_update_names_the_field_and_changes_nothing(
    store: ConfigStore, config_file: Path, agent_id: str, changes: dict, field: str
) -> None:
    before, text = store.current, config_file.read_text()
    with pytest.raises(InvalidArgument) as caught:
        store.update_injection(agent_id, changes, reset=False)
    assert caught.value.field == field
    assert field.rsplit(".", 1)[-1] in caught.value.message
    assert store.current is before
    assert config_file.read_text() == text


def test_update_refuses_to_overwrite_a_broken_file(store: ConfigStore, config_file: Path) -> None:
    broken = BASE.replace("rrf_k = 42", "rrf_k = -1")
    write(config_file, broken)
    with pytest.raises(FailedPrecondition, match="retrieval.rrf_k"):
        store.update_injection("assistant", {"search_limit": 3}, reset=False)
    assert config_file.read_text() == broken


def test_update_picks_up_a_pending_valid_edit_first(store: ConfigStore, config_file: Path) -> None:
    write(config_file, BASE.replace("rrf_k = 42", "rrf_k = 44"))
    store.update_injection("assistant", {"search_limit": 3}, reset=False)
    assert "rrf_k = 44" in config_file.read_text()
    assert store.current.retrieval.rrf_k == 44


def test_update_without_a_file_creates_it(tmp_path: Path) -> None:
    path = tmp_path / "data" / "memsidecar.toml"
    store = ConfigStore.open(path)
    assert store.current.defaults == MemoryInjectionConfig()
    store.update_injection("a", {"pinned_types": ["todo"], "ambient_enabled": True}, reset=False)
    assert tomllib.loads(path.read_text()) == {
        "agents": [{"id": "a", "memory_injection": {"pinned_types": ["todo"],
                                                    "ambient_enabled": True}}]}
    assert ConfigStore.open(path, required=True).current == store.current
    assert not list(path.parent.glob("*.tmp"))


def test_required_file_missing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="no such file"):
        ConfigStore.open(tmp_path / "absent.toml", required=True)


def test_close_stops_the_watcher(store: ConfigStore) -> None:
    store.watch(interval=0.05)
    assert any(t.name == "config-reloader" for t in threading.enumerate())
    store.close()
    assert not any(t.name == "config-reloader" for t in threading.enumerate())


def test_non_utf8_edit_is_rejected(store: ConfigStore, config_file: Path) -> None:
    good = store.current
    config_file.write_bytes(b"[vault]\nmax_chars = 5 # \xff\n")
    assert not store.reload()
    assert store.current is good
