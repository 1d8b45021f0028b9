"""A scope's stored rows for its load: its live memories with their embeddings, in seq order
and in pages, and the edges from them.

On SQLite the memories and then their edges are read (two local reads, ``scope_rows_apart``:
also the exact reference). On PostgreSQL each page of memories comes with its edges in one
statement, so one round trip and one snapshot (``scope_rows_joined``): the edges are those
from the page's memories as they were committed when the page was read.
"""

from __future__ import annotations

import numpy as np

from sidecar.records import Edge, Memory
from sidecar.store import edges as edge_rows
from sidecar.store.edges import EdgeRepo, row_to_edge
from sidecar.store.memories import (
    COLUMNS,
    MemoryRepo,
    embeddings_of,
    row_to_memory,
    scope_filter,
)

PAGE = 4096  # memories per read
Pages = list[tuple[list[Memory], np.ndarray]]  # (memories, their embeddings (n, dim))

_MEMORY_WIDTH = len(COLUMNS.split(",")) + 1  # with the embedding
_EDGE_WIDTH = len(edge_rows.COLUMNS.split(","))


def scope_rows(memories: MemoryRepo, edges: EdgeRepo, agent_id: str, user_id: str,
               page: int = PAGE) -> tuple[Pages, list[Edge]]:
    """The live memories of the scope ``(agent_id, user_id)`` ('' '': the shared ones) in
    pages, and the edges whose source is one of them."""
    if memories.db.dialect == "postgres":
        return scope_rows_joined(memories, agent_id, user_id, page)
    return scope_rows_apart(memories, edges, agent_id, user_id, page)


def scope_rows_apart(memories: MemoryRepo, edges: EdgeRepo, agent_id: str, user_id: str,
                     page: int = PAGE) -> tuple[Pages, list[Edge]]:
    """The memories, then the edges from them: a read each."""
    pages = list(memories.iter_scope(agent_id, user_id, page))
    return pages, edges.committed_from([m.id for found, _ in pages for m in found])


def scope_rows_joined(memories: MemoryRepo, agent_id: str, user_id: str,
                      page: int = PAGE) -> tuple[Pages, list[Edge]]:
    """Each page of memories and the edges from them in one statement (PostgreSQL)."""
    sql = _joined(user_id)
    pages: Pages = []
    found_edges: list[Edge] = []
    last = 0
    while True:
        rows = memories.db.read_apart(sql, (agent_id, user_id, last, page))
        found = sorted((row[1:_MEMORY_WIDTH + 1] for row in rows if row[0] == 0),
                       key=lambda row: row[0])
        found_edges += [row_to_edge(row[_MEMORY_WIDTH + 1:]) for row in rows if row[0] == 1]
        if not found:
            return pages, found_edges
        pages.append(([row_to_memory(row) for row in found], embeddings_of(found)))
        last = found[-1][0]
        if len(found) < page:  # the last page: no read that finds nothing
            return pages, found_edges


def _joined(user_id: str) -> str:
    """A page of the scope's memories (kind 0) and the edges from them (kind 1), each kind's
    columns NULL in the other's rows."""
    nulls = ", ".join(["NULL"] * _MEMORY_WIDTH)
    edge_nulls = ", ".join(["NULL"] * _EDGE_WIDTH)
    from_edge = ", ".join(f"e.{c.strip()}" for c in edge_rows.COLUMNS.split(","))
    return (
        f"WITH page AS MATERIALIZED (SELECT {COLUMNS}, embedding FROM memories "
        f"WHERE agent_id = ? AND {scope_filter(user_id)} AND forgotten = 0 AND seq > ? "
        "ORDER BY seq LIMIT ?) "
        f"SELECT 0, page.*, {edge_nulls} FROM page UNION ALL "
        f"SELECT 1, {nulls}, {from_edge} FROM edges e JOIN page ON e.source_id = page.id")

