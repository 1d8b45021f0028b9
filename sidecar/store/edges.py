"""Edge rows between memories."""

from __future__ import annotations

from collections.abc import Sequence

from sidecar.records import Edge, Relation, relation_of
from sidecar.store.contract import Row, SqlStore

COLUMNS = "source_id, target_id, relation, weight, created_at"


def row_to_edge(row: Row) -> Edge:
    return Edge(
        source_id=row[0], target_id=row[1], relation=relation_of(row[2]),
        weight=float(row[3]), created_at=row[4],
    )


UPSERT = (f"INSERT INTO edges ({COLUMNS}) VALUES (?,?,?,?,?) "
          "ON CONFLICT (source_id, target_id, relation) DO UPDATE SET weight = excluded.weight")


def edge_row(edge: Edge) -> tuple[str, str, int, float, int]:
    return edge.source_id, edge.target_id, int(edge.relation), edge.weight, edge.created_at


class EdgeRepo:
    def __init__(self, db: SqlStore) -> None:
        self.db = db

    def upsert(self, edge: Edge) -> Edge:
        self.db.execute(UPSERT, edge_row(edge))
        stored = self.get(edge.source_id, edge.target_id, edge.relation)
        assert stored is not None
        return stored

    def upsert_many(self, edges: Sequence[Edge]) -> None:
        """Write ``edges`` (as ``upsert`` each, read nothing back) in one transaction."""
        with self.db.transaction():
            self.db.executemany(UPSERT, [edge_row(e) for e in edges])

    def get(self, source_id: str, target_id: str, relation: Relation) -> Edge | None:
        row = self.db.query_one(
            f"SELECT {COLUMNS} FROM edges WHERE source_id = ? AND target_id = ? AND relation = ?",
            (source_id, target_id, int(relation)),
        )
        return row_to_edge(row) if row else None

    def remove(self, source_id: str, target_id: str, relation: Relation) -> bool:
        with self.db.transaction():
            self.db.execute(
                "DELETE FROM edges WHERE source_id = ? AND target_id = ? AND relation = ?",
                (source_id, target_id, int(relation)),
            )
            return self.db.changes() > 0

    def committed_touching(self, ids: Sequence[str], chunk: int = 400) -> list[Edge]:
        """Edges with either end in ``ids``, read on a connection of their own
        (``SqlStore.read_apart``: committed rows, never waiting for this process's writes)."""
        found: dict[tuple[str, str, int], Edge] = {}
        for start in range(0, len(ids), chunk):
            part = list(ids[start:start + chunk])
            marks = ",".join("?" * len(part))
            for row in self.db.read_apart(
                    f"SELECT {COLUMNS} FROM edges WHERE source_id IN ({marks}) "
                    f"UNION ALL SELECT {COLUMNS} FROM edges WHERE target_id IN ({marks})",
                    (*part, *part)):  # an edge found twice is kept once below (no sort)
                edge = row_to_edge(row)
                found[(edge.source_id, edge.target_id, int(edge.relation))] = edge
        return list(found.values())

    def committed_from(self, ids: Sequence[str], chunk: int = 400) -> list[Edge]:
        """Edges whose source is in ``ids``, on a connection of their own (as
        ``committed_touching``): one read of the primary key per id."""
        found: list[Edge] = []
        for start in range(0, len(ids), chunk):
            part = list(ids[start:start + chunk])
            found += map(row_to_edge, self.db.read_apart(
                f"SELECT {COLUMNS} FROM edges WHERE source_id IN "
                f"({','.join('?' * len(part))})", tuple(part)))
        return found

    def touching(self, ids: Sequence[str], limit: int | None = None) -> list[Edge]:
        """Edges with either end in ``ids`` (both directions); at most ``limit`` of them."""
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        cap = " LIMIT ?" if limit is not None else ""
        rows = self.db.execute(
            f"SELECT {COLUMNS} FROM edges WHERE source_id IN ({marks}) "
            f"UNION SELECT {COLUMNS} FROM edges WHERE target_id IN ({marks}){cap}",
            (*ids, *ids, *((limit,) if limit is not None else ())),
        )
        return [row_to_edge(row) for row in rows]

    def all(self) -> list[Edge]:
        return [row_to_edge(row) for row in self.db.execute(f"SELECT {COLUMNS} FROM edges")]

    def count(self) -> int:
        row = self.db.query_one("SELECT count(*) FROM edges")
        return int(row[0]) if row else 0
