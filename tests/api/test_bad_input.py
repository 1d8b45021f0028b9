"""The bad-input catalogue: every RPC, every name-like field, the text caps, page tokens, PII in
every stored text field. Each case asserts the status, that the message and the
``memsidecar-field`` trailer name the field, that the bad value is not echoed whole, and that
nothing stored changed (a full dump of the database and the config file before and after)."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import settings_pb2 as st
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import vault_pb2 as v

from sidecar.api import grpc_log
from sidecar.api.grpc_log import EVERY_S, GRPC_LOGGER, MALFORMED
from sidecar.api.server_config import ServerConfig
from sidecar.api.validate import (
    MAX_INJECT_TEXT_CHARS,
    MAX_INJECT_TEXTS,
    MAX_MESSAGES,
    MAX_NAME_CHARS,
    MAX_QUERY_CHARS,
    MAX_TYPE_FILTERS,
)
from sidecar.embedding import Embedder
from sidecar.memory.validation import MAX_TIME_US, MAX_VERSION
from sidecar.metrics.config import HttpConfig
from tests.conftest import Running, start_server

INVALID = grpc.StatusCode.INVALID_ARGUMENT
LONG = "s3cr3t-" * 40  # 280 characters
BAD_NAMES = {
    "too_long": LONG[: MAX_NAME_CHARS + 1],
    "newline": "alice\nINFO forged",
    "nul": "ali\x00ce",
    "del": "ali\x7fce",
    "c1": "ali\x85ce",
    "escape": "\x1b[31mred",
    "line_separator": "alice\u2028INFO forged",
}
CARD = "billing:4111-1111-1111-1111"


@dataclass(frozen=True)
class Case:
    name: str
    call: Callable[[Running], Any]
    field: str
    bad: str = ""
    code: grpc.StatusCode = INVALID


def _memory(**kw: Any) -> m.Memory:
    return m.Memory(content=kw.pop("content", "a valid memory"), type=m.MEMORY_TYPE_FACT, **kw)


def _token(payload: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def _name_cases() -> Iterator[Case]:
    """Every name-like field of every RPC with each kind of bad value."""
    per_rpc: list[tuple[str, str, Callable[[str], Callable[[Running], Any]]]] = [
        ("upsert.agent_id", "memory.agent_id",
         lambda b: lambda r: r.store.UpsertMemory(s.UpsertMemoryRequest(memory=_memory(
             agent_id=b)))),
        ("upsert.channel_id", "memory.channel_id",
         lambda b: lambda r: r.store.UpsertMemory(s.UpsertMemoryRequest(memory=_memory(
             channel_id=b)))),
        ("upsert.source", "memory.source",
         lambda b: lambda r: r.store.UpsertMemory(s.UpsertMemoryRequest(memory=_memory(
             source=b)))),
        ("upsert.topic_id", "memory.topic_id",
         lambda b: lambda r: r.store.UpsertMemory(s.UpsertMemoryRequest(memory=_memory(
             topic_id=b, tier=m.TIER_REGISTER)))),
        ("upsert.id", "memory.id",
         lambda b: lambda r: r.store.UpsertMemory(s.UpsertMemoryRequest(memory=_memory(id=b)))),
        ("get.id", "id", lambda b: lambda r: r.store.GetMemory(s.GetMemoryRequest(id=b))),
        ("get.agent_id", "agent_id",
         lambda b: lambda r: r.store.GetMemory(s.GetMemoryRequest(id="x", agent_id=b))),
        ("forget.id", "id",
         lambda b: lambda r: r.store.ForgetMemory(s.ForgetMemoryRequest(id=b))),
        ("forget.source", "source",
         lambda b: lambda r: r.store.ForgetMemory(s.ForgetMemoryRequest(id="x", source=b))),
        ("forget.agent_id", "agent_id",
         lambda b: lambda r: r.store.ForgetMemory(s.ForgetMemoryRequest(id="x", agent_id=b))),
        ("list.agent_id", "agent_id",
         lambda b: lambda r: r.store.ListMemories(s.ListMemoriesRequest(agent_id=b))),
        ("list.channel_id", "channel_id",
         lambda b: lambda r: r.store.ListMemories(s.ListMemoriesRequest(channel_id=b))),
        ("add_edge.source_id", "edge.source_id",
         lambda b: lambda r: r.store.AddEdge(s.AddEdgeRequest(edge=m.Edge(
             source_id=b, target_id="x", relation=m.RELATION_RELATED_TO)))),
        ("add_edge.agent_id", "agent_id",
         lambda b: lambda r: r.store.AddEdge(s.AddEdgeRequest(agent_id=b, edge=m.Edge(
             source_id="x", target_id="y", relation=m.RELATION_RELATED_TO)))),
        ("remove_edge.target_id", "target_id",
         lambda b: lambda r: r.store.RemoveEdge(s.RemoveEdgeRequest(
             source_id="x", target_id=b, relation=m.RELATION_RELATED_TO))),
        ("search.agent_id", "agent_id",
         lambda b: lambda r: r.store.Search(s.SearchRequest(query="tea", agent_id=b))),
        ("inject.agent_id", "agent_id",
         lambda b: lambda r: r.injection.Inject(inj.InjectRequest(
             channel_id="c", text="hello", agent_id=b))),
        ("inject.channel_id", "channel_id",
         lambda b: lambda r: r.injection.Inject(inj.InjectRequest(channel_id=b, text="hi"))),
        ("inject.source", "source",
         lambda b: lambda r: r.injection.Inject(inj.InjectRequest(
             channel_id="c", text="hi", source=b))),
        ("prune.agent_id", "agent_id",
         lambda b: lambda r: r.injection.PruneHistory(inj.PruneHistoryRequest(agent_id=b))),
        ("reset.channel_id", "channel_id",
         lambda b: lambda r: r.injection.ResetChannel(inj.ResetChannelRequest(channel_id=b))),
        ("reset.agent_id", "agent_id",
         lambda b: lambda r: r.injection.ResetChannel(inj.ResetChannelRequest(
             channel_id="c", agent_id=b))),
        ("get_config.agent_id", "agent_id",
         lambda b: lambda r: r.settings.GetConfig(st.GetConfigRequest(agent_id=b))),
        ("update_config.agent_id", "agent_id",
         lambda b: lambda r: r.settings.UpdateConfig(st.UpdateConfigRequest(
             agent_id=b, memory_injection=st.MemoryInjectionConfig(enabled=False)))),
        ("promote.id", "id",
         lambda b: lambda r: r.vault.PromoteToCanon(v.PromoteToCanonRequest(id=b))),
        ("history.agent_id", "agent_id",
         lambda b: lambda r: r.vault.GetMemoryHistory(v.GetMemoryHistoryRequest(
             id="x", agent_id=b))),
        ("snapshot.agent_id", "agent_id",
         lambda b: lambda r: r.vault.GetSnapshot(v.GetSnapshotRequest(agent_id=b))),
        ("consolidation.scope", "scope",
         lambda b: lambda r: r.vault.FindConsolidationCandidates(
             v.FindConsolidationCandidatesRequest(scope=b))),
        ("deletions.scope", "scope",
         lambda b: lambda r: r.vault.ProposeDeletions(v.ProposeDeletionsRequest(scope=b))),
    ]
    kinds = list(BAD_NAMES.items())
    for index, (name, field, make) in enumerate(per_rpc):
        # Every field gets a too-long value and a control character; the other kinds rotate.
        for kind, bad in (kinds[0], kinds[1], kinds[2 + index % (len(kinds) - 2)]):
            yield Case(f"{name}-{kind}", make(bad), field, bad)


def _other_cases() -> Iterator[Case]:
    yield Case("search.query-too-long", lambda r: r.store.Search(s.SearchRequest(
        query="q" * (MAX_QUERY_CHARS + 1))), "query")
    yield Case("search.query-invisible", lambda r: r.store.Search(s.SearchRequest(
        query="\u200b\u2060 \ufeff")), "query")
    yield Case("inject.text-too-long", lambda r: r.injection.Inject(inj.InjectRequest(
        channel_id="c", text="w " * (MAX_INJECT_TEXT_CHARS // 2 + 1))), "text")
    yield Case("inject.text-invisible", lambda r: r.injection.Inject(inj.InjectRequest(
        channel_id="c", text="\u200b\u200c\u00ad")), "text")
    for label, content in (("zwsp", "\u200b\u200b"), ("mixed", " \u200d\n\ufeff\u2060\t"),
                           ("bidi", "\u200e\u200f\u202a")):
        yield Case(f"upsert.content-{label}", lambda r, c=content: r.store.UpsertMemory(
            s.UpsertMemoryRequest(memory=_memory(content=c))), "memory.content")
    for label, token in (
        ("garbage", "%%%not-base64%%%"),
        ("not-json", base64.urlsafe_b64encode(b"\xff\xfe").decode()),
        ("string-keys", _token({"s": "recent", "k": ["a", "b"]})),
        ("float-seq", _token({"s": "recent", "k": [1.5, 2]})),
        ("negative", _token({"s": "recent", "k": [-1, 5]})),
        ("overflow", _token({"s": "recent", "k": [2**64, 1]})),
        ("bool", _token({"s": "recent", "k": [True, 1]})),
        ("wrong-sort", _token({"s": "importance", "k": [1, 2]})),
        ("wrong-width", _token({"s": "recent", "k": [1]})),
        ("not-object", _token([1, 2])),
        ("too-long", "A" * 2000),
        ("forged-stored", _token({"s": "stored", "k": [3]})),  # decodes, but unsigned
        ("forged-mac", _token({"s": "stored", "k": [3]}) + "." + "0" * 32),
        ("forged-empty-mac", _token({"s": "stored", "k": [3]}) + "."),
    ):
        yield Case(f"list.page_token-{label}", lambda r, t=token: r.store.ListMemories(
            s.ListMemoriesRequest(page_token=t)), "page_token")
    yield Case("list.page_token-importance-out-of-range", lambda r: r.store.ListMemories(
        s.ListMemoriesRequest(sort=s.SORT_ORDER_IMPORTANCE,
                              page_token=_token({"s": "importance", "k": [7.5, 1, 2]}))),
        "page_token")
    for name in ("source", "topic_id", "channel_id", "content"):
        yield Case(f"upsert.pii-{name}", lambda r, n=name: r.store.UpsertMemory(
            s.UpsertMemoryRequest(memory=_memory(**{n: CARD}))), f"memory.{name}",
            CARD, grpc.StatusCode.FAILED_PRECONDITION)
    yield from _pii_name_cases()
    yield Case("import.item-agent_id", lambda r: _import_error(r, _memory(agent_id=LONG)),
               "items[0].agent_id")
    yield Case("import.item-source-control", lambda r: _import_error(
        r, _memory(source="a\nb")), "items[0].source")
    yield Case("import.item-pii-source", lambda r: _import_error(
        r, _memory(source=CARD)), "items[0].source", CARD, grpc.StatusCode.FAILED_PRECONDITION)
    yield Case("import_stream.item-agent_id", lambda r: _stream_error(
        r, s.ImportItem(memory=_memory(agent_id=LONG))), "items[0].agent_id")
    yield Case("import_stream.item-pii-content", lambda r: _stream_error(
        r, s.ImportItem(memory=_memory(content=CARD))), "items[0].content", CARD,
        grpc.StatusCode.FAILED_PRECONDITION)
    yield Case("import_stream.restore-no-times", lambda r: _stream_error(
        r, s.ImportItem(memory=_memory(id="restored", version=3), restore=True)),
        "items[0].created_at")
    yield from _restore_cases()
    yield from _count_cases()
    yield Case("import_stream.batch-too-big", lambda r: list(r.store.ImportMemoriesStream(iter([
        s.ImportBatch(items=[s.ImportItem(memory=_memory())] * 101)]))), "items")


SSN = "user 123-45-6789"
FULLWIDTH_CARD = "".join(chr(0xFF10 + int(c)) for c in "4111111111111111")


def _pii_name_cases() -> Iterator[Case]:
    """Names and ids are logged and kept in histories: PII in them is refused, whatever the
    vault's gates say, in other scripts and with other separators too."""
    pii = grpc.StatusCode.FAILED_PRECONDITION
    yield Case("upsert.pii-agent_id", lambda r: r.store.UpsertMemory(s.UpsertMemoryRequest(
        memory=_memory(agent_id=SSN))), "memory.agent_id", SSN, pii)
    yield Case("upsert.pii-fullwidth-source", lambda r: r.store.UpsertMemory(
        s.UpsertMemoryRequest(memory=_memory(source=FULLWIDTH_CARD))), "memory.source",
        FULLWIDTH_CARD, pii)
    yield Case("forget.pii-source", lambda r: r.store.ForgetMemory(s.ForgetMemoryRequest(
        id="x", source=SSN)), "source", SSN, pii)
    yield Case("forget.pii-source-en-dash", lambda r: r.store.ForgetMemory(
        s.ForgetMemoryRequest(id="x", source="by 123\u201345\u20136789")), "source",
        "123\u201345\u20136789", pii)
    yield Case("inject.pii-agent_id", lambda r: r.injection.Inject(inj.InjectRequest(
        channel_id="c", text="hi", agent_id=SSN)), "agent_id", SSN, pii)
    yield Case("inject.pii-channel_id", lambda r: r.injection.Inject(inj.InjectRequest(
        channel_id=f"card {CARD}", text="hi")), "channel_id", CARD, pii)
    yield Case("search.pii-agent_id", lambda r: r.store.Search(s.SearchRequest(
        query="tea", agent_id=SSN)), "agent_id", SSN, pii)
    yield Case("update_config.pii-agent_id", lambda r: r.settings.UpdateConfig(
        st.UpdateConfigRequest(agent_id=SSN, memory_injection=st.MemoryInjectionConfig(
            enabled=False))), "agent_id", SSN, pii)
    yield Case("import.item-pii-agent_id", lambda r: _import_error(
        r, _memory(agent_id=FULLWIDTH_CARD)), "items[0].agent_id", FULLWIDTH_CARD, pii)


def _restored(version: int = 3, created: int = 1_700_000_000, updated: int = 1_700_000_000,
              nanos: int = 0) -> s.ImportItem:
    return s.ImportItem(restore=True, memory=_memory(
        id="restored", version=version, created_at=Timestamp(seconds=created, nanos=nanos),
        updated_at=Timestamp(seconds=updated, nanos=nanos)))


def _restore_cases() -> Iterator[Case]:
    """Restores carry the server's own fields: each must fit the store and a later update."""
    for label, item, field in (
        ("version-2^64-1", _restored(version=2**64 - 1), "items[0].version"),
        ("version-2^63", _restored(version=2**63), "items[0].version"),
        ("version-2^63-1", _restored(version=2**63 - 1), "items[0].version"),
        ("version-over-max", _restored(version=MAX_VERSION + 1), "items[0].version"),
        ("created-2^40s", _restored(created=2**40, updated=2**40), "items[0].created_at"),
        ("created-2^62s", _restored(created=2**62, updated=2**62), "items[0].created_at"),
        ("updated-2^40s", _restored(updated=2**40), "items[0].updated_at"),
        ("year-9999", _restored(updated=MAX_TIME_US // 1_000_000), "items[0].updated_at"),
        ("nanos-2e9", _restored(nanos=2_000_000_000), "items[0].created_at"),
        ("nanos-negative", _restored(nanos=-1), "items[0].created_at"),
        ("before-1970", _restored(created=-5, updated=-5), "items[0].created_at"),
    ):
        yield Case(f"import_stream.restore-{label}",
                   lambda r, i=item: _stream_error(r, i), field)


def _update_config(**fields: Any) -> Callable[[Running], Any]:
    return lambda r: r.settings.UpdateConfig(st.UpdateConfigRequest(
        agent_id="alice", memory_injection=st.MemoryInjectionConfig(**fields)))


def _count_cases() -> Iterator[Case]:
    """Repeated fields over their documented maxima; settings checked before any work, their
    errors echoing at most a cut, escaped value."""
    message = inj.Message(role=inj.ROLE_USER, content="hi")
    yield Case("list.types-too-many", lambda r: r.store.ListMemories(s.ListMemoriesRequest(
        types=[m.MEMORY_TYPE_FACT] * 100_000)), "types")
    yield Case("search.types-too-many", lambda r: r.store.Search(s.SearchRequest(
        query="tea", types=[m.MEMORY_TYPE_FACT] * (MAX_TYPE_FILTERS + 1))), "types")
    yield Case("inject.texts-too-many", lambda r: r.injection.Inject(inj.InjectRequest(
        channel_id="c", texts=["hi"] * (MAX_INJECT_TEXTS + 1))), "texts")
    yield Case("prune.messages-too-many", lambda r: r.injection.PruneHistory(
        inj.PruneHistoryRequest(messages=[message] * (MAX_MESSAGES + 1))), "messages")
    yield Case("render.messages-too-many", lambda r: r.injection.RenderTranscript(
        inj.RenderTranscriptRequest(messages=[message] * (MAX_MESSAGES + 1))), "messages")
    pinned = "memory_injection.pinned_types"
    yield Case("update_config.pinned_types-10000", _update_config(
        pinned_types=["fact"] * 10_000, set_pinned_types=True), pinned)
    yield Case("update_config.pinned_types-1000-unknown", _update_config(
        pinned_types=[f"unknown-{i}" for i in range(1000)], set_pinned_types=True), pinned)
    yield Case("update_config.pinned_types-unknown", _update_config(
        pinned_types=["fact", "secret-project-x"]), pinned, "secret-project-x")
    yield Case("update_config.pinned_types-twice", _update_config(
        pinned_types=["fact", "FACT"]), pinned)
    for label, value in (("newline", "recent\nINFO forged line"), ("long", "importance" * 50)):
        yield Case(f"update_config.pinned_sort-{label}", _update_config(pinned_sort=value),
                   "memory_injection.pinned_sort", value)
    yield Case("update_config.pinned_source-unknown", _update_config(
        pinned_source="vault\u202eevil"), "memory_injection.pinned_source", "vault\u202eevil")
    yield Case("promote.id-empty", lambda r: r.vault.PromoteToCanon(v.PromoteToCanonRequest(
        id="")), "id")


class ImportRejected(Exception):
    def __init__(self, error: s.ImportError) -> None:
        super().__init__(error.message)
        self.error = error


def _import_error(r: Running, memory: m.Memory) -> None:
    reply = r.store.ImportMemories(iter([s.UpsertMemoryRequest(memory=memory)]))
    assert reply.rejected == 1 and reply.stored == 0
    raise ImportRejected(reply.errors[0])


def _stream_error(r: Running, item: s.ImportItem) -> None:
    (ack,) = r.store.ImportMemoriesStream(iter([s.ImportBatch(items=[item])]))
    assert ack.rejected == 1 and ack.committed == 0
    raise ImportRejected(ack.errors[0])


CASES = [*_name_cases(), *_other_cases()]


def test_the_catalogue_is_large_and_covers_every_rpc() -> None:
    assert len(CASES) >= 60
    prefixes = {c.name.split(".")[0].split("-")[0] for c in CASES}
    assert {"upsert", "import", "import_stream", "get", "forget", "list", "add_edge",
            "remove_edge", "search", "inject", "prune", "reset", "get_config", "update_config",
            "promote", "history", "snapshot", "consolidation", "deletions"} <= prefixes


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Running]:
    data = tmp_path_factory.mktemp("bad-input")
    live = start_server(ServerConfig(listen="127.0.0.1:0", data_dir=str(data),
                                     http=HttpConfig(listen="")), embedder)
    a = live.store.UpsertMemory(s.UpsertMemoryRequest(memory=_memory(
        content="Alice drinks green tea", agent_id="alice"))).memory
    b = live.store.UpsertMemory(s.UpsertMemoryRequest(memory=_memory(
        content="The office is in Oslo"))).memory
    live.store.AddEdge(s.AddEdgeRequest(agent_id="alice", edge=m.Edge(
        source_id=a.id, target_id=b.id, relation=m.RELATION_RELATED_TO)))
    live.injection.Inject(inj.InjectRequest(channel_id="c", agent_id="alice", text="tea?"))
    yield live
    live.close()


def dump(live: Running) -> list[Any]:
    """Every row of every table, then the config file's bytes (if any)."""
    app = live.server.app
    app.injector.states.writer.flush()  # the injection state written behind replies
    tables = [r[0] for r in app.db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    rows: list[Any] = [(t, app.db.execute(f"SELECT * FROM {t} ORDER BY 1")) for t in tables]
    config = Path(app.config.data_dir) / "memsidecar.toml"
    rows.append(config.read_bytes() if config.exists() else b"")
    return rows


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input(seeded: Running, case: Case) -> None:
    before = dump(seeded)
    with pytest.raises((grpc.RpcError, ImportRejected)) as info:
        case.call(seeded)
    if isinstance(info.value, ImportRejected):
        code, message, field = info.value.error.code, info.value.error.message, case.field
        assert code == case.code.name
    else:
        err = info.value
        code, message = err.code(), err.details()  # type: ignore[attr-defined]
        field = dict(err.trailing_metadata())["memsidecar-field"]  # type: ignore[attr-defined]
        assert code == case.code, message
        assert field == case.field
    assert case.field in message and len(message) < 400 and message.isprintable(), message
    if case.bad:
        assert case.bad not in message and case.bad[:9] not in message
    assert dump(seeded) == before


def test_a_malformed_request_logs_one_line_rate_limited(
        seeded: Running, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(MALFORMED, "clock", lambda: now[0])
    monkeypatch.setattr(MALFORMED, "_last", None)
    monkeypatch.setattr(MALFORMED, "_count", 0)
    raw = seeded.channel.unary_unary("/memsidecar.v1.MemoryStore/GetMemory")

    def garbage(times: int) -> None:
        for _ in range(times):
            with pytest.raises(grpc.RpcError) as info:
                raw(b"\xff\xff\xff\xff")
            assert info.value.code() == INVALID  # type: ignore[attr-defined]

    caplog.set_level(logging.WARNING)
    garbage(5)
    now[0] += EVERY_S - 0.001
    garbage(3)
    now[0] += 0.001
    garbage(1)
    lines = [r for r in caplog.records if r.name in (GRPC_LOGGER, grpc_log.__name__)]
    assert [(r.levelname, r.exc_info, r.getMessage()) for r in lines] == [
        ("WARNING", None, f"malformed requests: {n} not valid protobuf (DecodeError) since the "
         "previous such line") for n in (1, 8)]


def _field(number: int, raw: bytes) -> bytes:
    """A length-delimited protobuf field (``raw`` shorter than 128 bytes)."""
    return bytes([number << 3 | 2, len(raw)]) + raw


NOT_UTF8 = b"ada\xff\xfe"  # what a caller's bytes-as-string field puts on the wire


@pytest.mark.parametrize(("method", "body"), [
    ("MemoryInjection/Inject", _field(2, b"c") + _field(3, b"hello") + _field(7, NOT_UTF8)),
    ("MemoryStore/UpsertMemory", _field(1, _field(2, NOT_UTF8) + b"\x18\x06")),
    ("MemoryInjection/PruneHistory", _field(1, b"\x08\x01" + _field(2, NOT_UTF8))),
    ("MemoryStore/GetMemory", b"\xff\xff\xff\xff"),
], ids=["inject.user_id", "upsert.memory.content", "prune.messages.content", "garbage"])
def test_a_request_that_is_not_valid_protobuf_is_invalid_argument(
        seeded: Running, method: str, body: bytes) -> None:
    before = dump(seeded)
    raw = seeded.channel.unary_unary(f"/memsidecar.v1.{method}")
    with pytest.raises(grpc.RpcError) as info:
        raw(body)
    err = info.value
    assert err.code() == INVALID, err.details()  # type: ignore[attr-defined]
    assert dict(err.trailing_metadata())["memsidecar-reason"] == "MALFORMED_REQUEST"  # type: ignore[attr-defined]
    assert err.details().startswith(  # type: ignore[attr-defined]
        f"the {method.split('/')[1]} request is not valid protobuf (DecodeError): ")
    assert "UTF-8" in err.details() and "ada" not in err.details()  # type: ignore[attr-defined]
    assert dump(seeded) == before


def test_a_stream_ends_at_its_first_message_that_is_not_valid_protobuf(seeded: Running) -> None:
    first = s.ImportBatch(sequence=1, items=[s.ImportItem(memory=_memory(
        id="malformed-stream-first", content="The stream's first batch is committed"))])
    second = _field(2, _field(1, _field(2, NOT_UTF8) + b"\x18\x06"))  # items[0].memory.content
    raw = seeded.channel.stream_stream("/memsidecar.v1.MemoryStore/ImportMemoriesStream",
                                       request_serializer=None,
                                       response_deserializer=s.ImportBatchAck.FromString)
    acks = raw(iter([first.SerializeToString(), second]))
    with pytest.raises(grpc.RpcError) as info:
        for ack in acks:
            assert ack.sequence == 1 and ack.committed == 1
    assert info.value.code() == INVALID  # type: ignore[attr-defined]
    assert "ImportMemoriesStream request is not valid protobuf" in info.value.details()  # type: ignore[attr-defined]
    assert seeded.store.GetMemory(s.GetMemoryRequest(id="malformed-stream-first")).version == 1
