"""MemoryStore calls. Reads (Get, List, Search) are retried on UNAVAILABLE; writes are not."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from memsidecar.v1 import memory_pb2, store_pb2

from memsidecar_client.messages import MemoryTypeLike, memory_type
from memsidecar_client.records import tier as tier_value
from memsidecar_client.transport import Transport


class StoreCalls(Transport):
    def upsert(self, content: str, type: MemoryTypeLike = "fact", *, id: str = "",
               importance: float | None = None, agent_id: str = "", channel_id: str = "",
               source: str = "", tier: str | int = 0, topic_id: str = "", user_id: str = "",
               ) -> store_pb2.UpsertMemoryResponse:
        """Store a memory (empty ``id`` = new); ``type`` and ``tier`` by name ("decision",
        "register") or enum value; ``user_id``: the end user it belongs to (needs
        ``agent_id``; offered only to that user's Search and Inject calls). Never retried: a
        lost reply may have stored it."""
        memory = memory_pb2.Memory(
            id=id, content=content, type=memory_type(type), agent_id=agent_id,
            channel_id=channel_id, source=source, tier=tier_value(tier),
            topic_id=topic_id, user_id=user_id)
        if importance is not None:
            memory.importance = importance
        return self.upsert_memory(memory)

    def upsert_memory(self, memory: memory_pb2.Memory) -> store_pb2.UpsertMemoryResponse:
        return self._call("UpsertMemory", self.store.UpsertMemory,
                          store_pb2.UpsertMemoryRequest(memory=memory), idempotent=False)

    def import_memories(self, memories: Iterable[memory_pb2.Memory], *,
                        timeout_s: float = 600.0) -> store_pb2.ImportMemoriesResponse:
        """Stream memories in one call (not retried); returns the summary."""
        requests = (store_pb2.UpsertMemoryRequest(memory=m) for m in memories)
        return self._call("ImportMemories", self.store.ImportMemories, requests,
                          idempotent=False, timeout_s=timeout_s)

    def get(self, id: str, agent_id: str = "") -> memory_pb2.Memory:
        return self._call("GetMemory", self.store.GetMemory,
                          store_pb2.GetMemoryRequest(id=id, agent_id=agent_id), idempotent=True)

    def forget(self, id: str, source: str = "", agent_id: str = "", *,
               hard: bool = False) -> store_pb2.ForgetMemoryResponse:
        """Forget a memory of ``agent_id``'s scope ('' = a shared one). ``hard``: erase it
        for good (its text, versions and edges leave the disk) instead of marking it
        forgotten."""
        request = store_pb2.ForgetMemoryRequest(id=id, source=source, agent_id=agent_id,
                                                hard=hard)
        return self._call("ForgetMemory", self.store.ForgetMemory, request, idempotent=False)

    def forget_user(self, agent_id: str, user_id: str) -> store_pb2.ForgetUserResponse:
        """Erase every memory ``user_id`` has with ``agent_id`` and the state of the channels
        they spoke in, for good; returns the counts. A second call erases nothing (safe to
        repeat after a lost reply; not retried itself)."""
        request = store_pb2.ForgetUserRequest(agent_id=agent_id, user_id=user_id)
        return self._call("ForgetUser", self.store.ForgetUser, request, idempotent=False)

    def list(self, *, types: Sequence[MemoryTypeLike] = (), channel_id: str = "",
             agent_id: str = "", sort: int = 0, page_size: int = 0, page_token: str = "",
             include_forgotten: bool = False, all_agents: bool = False,
             source: str = "", user_id: str = "") -> store_pb2.ListMemoriesResponse:
        """One page; ``all_agents``: every agent's memories and the shared ones (with
        authentication on, the operator token only); ``source``: only memories written with
        it ("capture": the captured turns); ``user_id``: only that end user's ('' = every
        memory, each user's included)."""
        request = store_pb2.ListMemoriesRequest(
            types=[memory_type(t) for t in types], channel_id=channel_id, agent_id=agent_id,
            sort=sort, page_size=page_size, page_token=page_token,
            include_forgotten=include_forgotten, all_agents=all_agents, source=source,
            user_id=user_id)
        return self._call("ListMemories", self.store.ListMemories, request, idempotent=True)

    def iter_memories(self, *, types: Sequence[MemoryTypeLike] = (), channel_id: str = "",
                      agent_id: str = "", sort: int = 0, page_size: int = 0,
                      include_forgotten: bool = False, all_agents: bool = False,
                      source: str = "", user_id: str = "") -> Iterator[memory_pb2.Memory]:
        """Every matching memory, following page tokens."""
        token = ""
        while True:
            page = self.list(types=types, channel_id=channel_id, agent_id=agent_id, sort=sort,
                             page_size=page_size, page_token=token,
                             include_forgotten=include_forgotten, all_agents=all_agents,
                             source=source, user_id=user_id)
            yield from page.memories
            token = page.next_page_token
            if not token:
                return

    def add_edge(self, source_id: str, target_id: str, relation: int,
                 weight: float | None = None, agent_id: str = "") -> memory_pb2.Edge:
        """Link two memories of ``agent_id``'s scope or shared ones."""
        edge = memory_pb2.Edge(source_id=source_id, target_id=target_id,
                               relation=relation)
        if weight is not None:
            edge.weight = weight
        return self._call("AddEdge", self.store.AddEdge,
                          store_pb2.AddEdgeRequest(edge=edge, agent_id=agent_id),
                          idempotent=False)

    def remove_edge(self, source_id: str, target_id: str, relation: int,
                    agent_id: str = "") -> None:
        request = store_pb2.RemoveEdgeRequest(source_id=source_id, target_id=target_id,
                                              relation=relation, agent_id=agent_id)
        self._call("RemoveEdge", self.store.RemoveEdge, request, idempotent=False)

    def search(self, query: str, *, agent_id: str = "", limit: int = 0,
               types: Sequence[MemoryTypeLike] = (), mode: int = 0, search_limit: int = 0,
               debug: bool = False, user_id: str = "") -> store_pb2.SearchResponse:
        """Hybrid search as ``agent_id``; with ``user_id``, that end user's private memories
        are searched too (without it, no user's)."""
        request = store_pb2.SearchRequest(
            query=query, agent_id=agent_id, limit=limit, types=[memory_type(t) for t in types],
            mode=mode, search_limit=search_limit, debug=debug, user_id=user_id)
        return self._call("Search", self.store.Search, request, idempotent=True)
