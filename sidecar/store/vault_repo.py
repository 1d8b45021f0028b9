"""SQL the vault needs beyond MemoryRepo: topics, scope counts, snapshot picks, stats."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sidecar.records import Memory, MemoryDraft, Tier
from sidecar.store.contract import SqlStore, unhinted
from sidecar.store.memories import COLUMNS, blob_to_embedding, row_to_memory
from sidecar.store.page_tokens import SCOPE, PageTokens


class VaultRepo:
    def __init__(self, db: SqlStore, page_tokens: PageTokens | None = None) -> None:
        self.db = db
        self.page_tokens = page_tokens or PageTokens()

    def live_register(self, draft: MemoryDraft) -> Memory | None:
        """The newest live REGISTER memory with the draft's topic in exactly its scope (its
        agent, and its end user or channel when private)."""
        row = self.db.query_one(
            f"SELECT {COLUMNS} FROM memories WHERE agent_id = ? AND topic_id = ? AND tier = ? "
            "AND forgotten = 0 AND user_id = ? AND channel_private = ? "
            "AND (channel_private = 0 OR channel_id = ?) "
            "ORDER BY updated_at DESC, seq DESC LIMIT 1",
            (draft.agent_id, draft.topic_id, int(Tier.REGISTER), draft.user_id,
             int(draft.channel_private), draft.channel_id),
        )
        return row_to_memory(row) if row else None

    def count_live(self, agent_id: str) -> int:
        row = self.db.query_one(
            "SELECT count(*) FROM memories WHERE agent_id = ? AND forgotten = 0", (agent_id,)
        )
        return int(row[0]) if row else 0

    def live_after(self, seq: int, agent_id: str, user_id: str = "") -> list[tuple[int, str]]:
        """(seq, id) of live memories of the writer scopes of (``agent_id``, ``user_id``)
        (the agent's general knowledge and the user's own) with seq > ``seq``: rows written
        since the caller's index last heard of a commit, including this transaction's."""
        rows = self.db.execute(
            # Unary +: walk the rowid range (seq > ?), never a whole scope through an index.
            f"SELECT seq, id FROM memories WHERE seq > ? AND {unhinted(self.db, 'agent_id')} = ? "
            f"AND {unhinted(self.db, 'user_id')} IN ('', ?) "
            f"AND {unhinted(self.db, 'forgotten')} = 0 ORDER BY seq",
            (seq, agent_id, user_id),
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    def embeddings_by_seq(self, seqs: Sequence[int]) -> dict[int, np.ndarray]:
        found: dict[int, np.ndarray] = {}
        for start in range(0, len(seqs), 500):
            chunk = list(seqs[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(
                f"SELECT seq, embedding FROM memories WHERE seq IN ({marks})", tuple(chunk))
            found.update({int(r[0]): blob_to_embedding(r[1]) for r in rows})
        return found

    def visible_tier(self, agent_id: str, tier: Tier, order: str, limit: int) -> list[Memory]:
        """Live memories of a tier visible to an agent (shared + its own general knowledge:
        never a user's or a channel's private ones), REGISTERs only with a topic, captured
        turns (source "capture") never. ``order``: 'importance' or 'recent'."""
        keys = "importance DESC, updated_at DESC" if order == "importance" else "updated_at DESC"
        topic = " AND topic_id != ''" if tier == Tier.REGISTER else ""
        rows = self.db.execute(
            f"SELECT {COLUMNS} FROM memories WHERE forgotten = 0 AND tier = ? "
            f"AND agent_id IN ('', ?) AND source != 'capture' AND user_id = '' "
            f"AND channel_private = 0{topic} "
            f"ORDER BY {keys}, seq DESC LIMIT ?",
            (int(tier), agent_id, limit),
        )
        return [row_to_memory(r) for r in rows]

    def live_in_scope(self, agent_id: str) -> list[Memory]:
        rows = self.db.execute(
            f"SELECT {COLUMNS} FROM memories WHERE agent_id = ? AND forgotten = 0 ORDER BY seq",
            (agent_id,),
        )
        return [row_to_memory(r) for r in rows]

    def superseded(self, ids: Sequence[str]) -> dict[str, str]:
        """target id -> id of a live memory that UPDATES it (edge relation UPDATES = 2)."""
        found: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(
                "SELECT e.target_id, e.source_id FROM edges e JOIN memories m "
                f"ON m.id = e.source_id WHERE e.relation = 2 AND m.forgotten = 0 "
                f"AND e.target_id IN ({marks}) ORDER BY m.updated_at",
                tuple(chunk),
            )
            found.update({r[0]: r[1] for r in rows})
        return found

    def superseded_in_scope(self, agent_id: str, limit: int) -> list[tuple[Memory, str]]:
        """(memory, the id of its newest live successor) for at most ``limit`` live memories
        of exactly this scope that a live memory UPDATES (edge relation 2), in seq order."""
        rows = self.db.execute(
            f"SELECT * FROM (SELECT {COLUMNS}, (SELECT e.source_id FROM edges e JOIN memories s "
            "ON s.id = e.source_id WHERE e.target_id = memories.id AND e.relation = 2 "
            "AND s.forgotten = 0 ORDER BY s.updated_at DESC, s.seq DESC LIMIT 1) AS successor "
            "FROM memories WHERE agent_id = ? AND forgotten = 0) AS scoped "
            "WHERE successor IS NOT NULL ORDER BY seq LIMIT ?",
            (agent_id, limit),
        )
        return [(row_to_memory(r), str(r[-1])) for r in rows]

    def stale_in_scope(self, agent_id: str, max_importance: float, before_us: int,
                       limit: int) -> list[Memory]:
        """At most ``limit`` live memories of exactly this scope with importance <=
        ``max_importance``, neither updated nor accessed since ``before_us``, in seq order."""
        rows = self.db.execute(
            f"SELECT {COLUMNS} FROM memories WHERE agent_id = ? AND forgotten = 0 "
            "AND importance <= ? AND updated_at < ? AND last_accessed_at < ? ORDER BY seq "
            "LIMIT ?",
            (agent_id, max_importance, before_us, before_us, limit),
        )
        return [row_to_memory(r) for r in rows]

    def counts(self, first: str, last: str) -> list[tuple[str, int, int, bool, int]]:
        """(agent_id, tier, type, forgotten, count) for every non-empty group of the scopes
        from ``first`` to ``last`` (agent ids, both included: a page of scopes)."""
        rows = self.db.execute(
            "SELECT agent_id, tier, type, forgotten, count(*) FROM memories "
            "WHERE agent_id >= ? AND agent_id <= ? "
            "GROUP BY agent_id, tier, type, forgotten ORDER BY agent_id, tier, type, forgotten",
            (first, last),
        )
        return [(r[0], int(r[1]), int(r[2]), bool(r[3]), int(r[4])) for r in rows]

    def scope_counts(self, after: str | None, before: str | None, limit: int
                     ) -> list[tuple[str, int, int, int, int, int, int]]:
        """(agent_id, live, forgotten, live CANON, live REGISTER, end users with a live
        memory, live memories of end users) of at most ``limit`` scopes
        in agent_id order: the first ones, the ones after ``after`` or the last ones before
        ``before`` (a page of scopes; the index on agent_id stops the scan at the page)."""
        where, order = "", ""
        bound: tuple[str, ...] = ()
        if before is not None:
            where, order, bound = "WHERE agent_id < ?", " DESC", (before,)
        elif after is not None:
            where, bound = "WHERE agent_id > ?", (after,)
        rows = self.db.execute(
            "SELECT agent_id, sum(CASE WHEN forgotten = 0 THEN 1 ELSE 0 END), "
            "sum(CASE WHEN forgotten = 0 THEN 0 ELSE 1 END), "
            "sum(CASE WHEN forgotten = 0 AND tier = ? THEN 1 ELSE 0 END), "
            "sum(CASE WHEN forgotten = 0 AND tier = ? THEN 1 ELSE 0 END), "
            "count(DISTINCT CASE WHEN forgotten = 0 AND user_id != '' THEN user_id END), "
            "sum(CASE WHEN forgotten = 0 AND user_id != '' THEN 1 ELSE 0 END) "
            f"FROM memories {where} GROUP BY agent_id ORDER BY agent_id{order} LIMIT ?",
            (int(Tier.CANON), int(Tier.REGISTER), *bound, limit),
        )
        found = [(str(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), int(r[5]),
                  int(r[6] or 0)) for r in rows]
        return found[::-1] if before is not None else found

    def user_counts(self, agent_id: str, limit: int) -> list[tuple[str, int, int]]:
        """(user_id, live memories, of which captured) of the ``limit`` end users of
        ``agent_id`` with the most live memories."""
        rows = self.db.execute(
            "SELECT user_id, count(*), sum(CASE WHEN source = 'capture' THEN 1 ELSE 0 END) "
            "FROM memories WHERE agent_id = ? AND user_id != '' AND forgotten = 0 "
            "GROUP BY user_id ORDER BY count(*) DESC, user_id LIMIT ?", (agent_id, limit))
        return [(str(r[0]), int(r[1]), int(r[2] or 0)) for r in rows]

    def scope_after(self, page_token: str) -> str | None:
        """The agent id a VaultStats page token continues after (None: the first page)."""
        return str(self.page_tokens.decode(page_token, SCOPE, 1)[0]) if page_token else None

    def scope_token(self, last_agent_id: str) -> str:
        """The VaultStats page token of the page after the scope ``last_agent_id``."""
        return self.page_tokens.encode(SCOPE, [last_agent_id])

    def totals(self) -> tuple[int, int, int]:
        """(live, forgotten, scopes) over the whole store."""
        row = self.db.query_one(
            "SELECT sum(CASE WHEN forgotten = 0 THEN 1 ELSE 0 END), "
            "sum(CASE WHEN forgotten = 0 THEN 0 ELSE 1 END), count(DISTINCT agent_id) "
            "FROM memories")
        return (int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)) if row else (0, 0, 0)

    def live_by_source(self, source: str, first: str, last: str) -> dict[str, int]:
        """Live memories written with ``source``, per scope, of the scopes from ``first`` to
        ``last`` (agent_id order: a page of scopes)."""
        return {str(r[0]): int(r[1]) for r in self.db.execute(
            "SELECT agent_id, count(*) FROM memories WHERE source = ? AND forgotten = 0 "
            "AND agent_id >= ? AND agent_id <= ? GROUP BY agent_id", (source, first, last))}

    def live_count_of_source(self, source: str) -> int:
        """Live memories written with ``source`` in all scopes."""
        row = self.db.query_one(
            "SELECT count(*) FROM memories WHERE source = ? AND forgotten = 0", (source,))
        return int(row[0]) if row else 0

    def register_topics(self) -> int:
        row = self.db.query_one(
            "SELECT count(*) FROM (SELECT DISTINCT agent_id, topic_id FROM memories "
            "WHERE tier = ? AND topic_id != '' AND forgotten = 0) AS topics",
            (int(Tier.REGISTER),),
        )
        return int(row[0]) if row else 0
