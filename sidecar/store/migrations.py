"""Forward-only schema migrations. Append new steps; never edit a released one.

``MIGRATIONS[i]`` moves the schema from version ``i`` to ``i + 1`` (PRAGMA user_version).
"""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # 1: memories, edges, room for history and injection state.
    """
    CREATE TABLE memories (
        seq              INTEGER PRIMARY KEY,
        id               TEXT NOT NULL UNIQUE,
        content          TEXT NOT NULL,
        type             INTEGER NOT NULL,
        importance       REAL NOT NULL,
        created_at       INTEGER NOT NULL,
        updated_at       INTEGER NOT NULL,
        last_accessed_at INTEGER NOT NULL DEFAULT 0,
        access_count     INTEGER NOT NULL DEFAULT 0,
        source           TEXT NOT NULL DEFAULT '',
        channel_id       TEXT NOT NULL DEFAULT '',
        agent_id         TEXT NOT NULL DEFAULT '',
        forgotten        INTEGER NOT NULL DEFAULT 0,
        version          INTEGER NOT NULL DEFAULT 1,
        tier             INTEGER NOT NULL DEFAULT 1,
        topic_id         TEXT NOT NULL DEFAULT '',
        embedding        BLOB NOT NULL
    );
    CREATE INDEX memories_recent ON memories (forgotten, updated_at DESC, seq DESC);
    CREATE INDEX memories_importance ON memories (forgotten, importance DESC, updated_at DESC);
    CREATE INDEX memories_agent ON memories (agent_id, type);
    CREATE INDEX memories_topic ON memories (agent_id, topic_id) WHERE topic_id != '';
    CREATE TABLE edges (
        source_id  TEXT NOT NULL REFERENCES memories(id),
        target_id  TEXT NOT NULL REFERENCES memories(id),
        relation   INTEGER NOT NULL,
        weight     REAL NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (source_id, target_id, relation)
    ) WITHOUT ROWID;
    CREATE INDEX edges_target ON edges (target_id);
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID;
    """,
    # 2 (vault): append-only history. One row per insert/update/forget of a memory, written by
    # MemoryRepo in the same transaction; existing memories get a 'baseline' row. Plus a
    # covering index for live counts per scope (capacity gate, stats).
    """
    CREATE TABLE memory_versions (
        seq         INTEGER PRIMARY KEY,
        memory_id   TEXT NOT NULL,
        version     INTEGER NOT NULL,
        event       TEXT NOT NULL,
        recorded_at INTEGER NOT NULL,
        actor       TEXT NOT NULL DEFAULT '',
        content     TEXT NOT NULL,
        type        INTEGER NOT NULL,
        importance  REAL NOT NULL,
        source      TEXT NOT NULL DEFAULT '',
        channel_id  TEXT NOT NULL DEFAULT '',
        agent_id    TEXT NOT NULL DEFAULT '',
        forgotten   INTEGER NOT NULL DEFAULT 0,
        tier        INTEGER NOT NULL DEFAULT 1,
        topic_id    TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX memory_versions_memory ON memory_versions (memory_id, seq);
    CREATE INDEX memories_scope_live ON memories (agent_id, forgotten);
    INSERT INTO memory_versions (memory_id, version, event, recorded_at, actor, content, type,
        importance, source, channel_id, agent_id, forgotten, tier, topic_id)
    SELECT id, version, 'baseline', updated_at, source, content, type, importance, source,
        channel_id, agent_id, forgotten, tier, topic_id FROM memories ORDER BY seq;
    """,
    # 3: per-channel injection state (turn counter, injected ids, semantic buffer).
    """
    CREATE TABLE injection_channels (
        channel_id TEXT PRIMARY KEY,
        turn       INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE injection_ids (
        channel_id  TEXT NOT NULL,
        memory_id   TEXT NOT NULL,
        turn        INTEGER NOT NULL,
        version     INTEGER NOT NULL,
        injected_at INTEGER NOT NULL,
        PRIMARY KEY (channel_id, memory_id)
    ) WITHOUT ROWID;
    CREATE TABLE injection_buffer (
        seq        INTEGER PRIMARY KEY,
        channel_id TEXT NOT NULL,
        memory_id  TEXT NOT NULL,
        turn       INTEGER NOT NULL,
        embedding  BLOB NOT NULL
    );
    CREATE INDEX injection_buffer_channel ON injection_buffer (channel_id, turn);
    """,
    # 4: which embedding model produced the stored vectors (meta 'embedding.model', a JSON
    # ModelIdentity; every store so far was built with the packaged fp32 graph), and the
    # vectors of a re-embed in progress towards meta 'embedding.target' (one per memory row at
    # the version it was computed for; copied over memories.embedding in one transaction).
    """
    INSERT INTO meta (key, value) VALUES ('embedding.model', '{"max_tokens": 256, '
        || '"name": "minilm-fp32", "pooling": "mean", '
        || '"sha256": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"}');
    CREATE TABLE reembed (
        seq       INTEGER PRIMARY KEY,
        version   INTEGER NOT NULL,
        embedding BLOB NOT NULL
    );
    """,
    # 5: the blocks a channel's agent holds, its last reply, and channel ownership (tables
    # once created by their repositories on open: IF NOT EXISTS keeps those stores as they are).
    """
    CREATE TABLE IF NOT EXISTS injection_blocks (
        channel_id TEXT NOT NULL,
        turn       INTEGER NOT NULL,
        digest     TEXT NOT NULL,
        PRIMARY KEY (channel_id, turn)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS injection_replies (
        channel_id TEXT PRIMARY KEY,
        keep       INTEGER,
        reply      TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS channel_owners (
        channel_id   TEXT PRIMARY KEY,
        agent_id     TEXT,
        last_used_us INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS channel_owners_idle ON channel_owners (last_used_us);
    """,
    # 6: vault suggestions dismissed on the admin page (a table once created by the page on
    # open: IF NOT EXISTS keeps those stores as they are).
    """
    CREATE TABLE IF NOT EXISTS admin_dismissed (
        key          TEXT PRIMARY KEY,
        dismissed_us INTEGER NOT NULL
    ) WITHOUT ROWID;
    """,
    # 7: each channel's last user turns, their embeddings and the replies to them (the
    # query context of the next turns).
    """
    CREATE TABLE injection_context (
        channel_id TEXT NOT NULL,
        turn       INTEGER NOT NULL,
        text       TEXT NOT NULL,
        embedding  BLOB NOT NULL,
        reply      TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (channel_id, turn)
    ) WITHOUT ROWID;
    """,
    # 8: turns captured as memories (sidecar/capture): pending until written through the
    # vault's gates (then their text is erased here), and whether the channel's history still
    # shows them (``held``).
    """
    CREATE TABLE IF NOT EXISTS captures (
        channel_id TEXT NOT NULL,
        key        TEXT NOT NULL,
        agent_id   TEXT NOT NULL,
        role       TEXT NOT NULL,
        turn       INTEGER NOT NULL,
        content    TEXT NOT NULL,
        context    TEXT NOT NULL,
        at_us      INTEGER NOT NULL,
        memory_id  TEXT NOT NULL,
        embedding  BLOB,
        outcome    TEXT NOT NULL DEFAULT '',
        held       INTEGER NOT NULL DEFAULT 1,
        PRIMARY KEY (channel_id, key)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS captures_pending ON captures (outcome, at_us);
    CREATE INDEX IF NOT EXISTS captures_memory ON captures (channel_id, memory_id);
    """,
    # 9: each recent turn's votes for the conversation's focus (sidecar/conversation/focus.py):
    # its search's and its reply's, as JSON [[memory id, weight], ...].
    """
    ALTER TABLE injection_context ADD COLUMN votes TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE injection_context ADD COLUMN reply_votes TEXT NOT NULL DEFAULT '[]';
    """,
    # 10: memories of one end user (user_id) or private to their channel (channel_private);
    # the turns captured so far become private to their channel, and a capture record keeps
    # the user it belongs to; the users who have spoken in each channel ('' = a turn
    # without user_id).
    """
    ALTER TABLE memories ADD COLUMN user_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE memories ADD COLUMN channel_private INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE memory_versions ADD COLUMN user_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE memory_versions ADD COLUMN channel_private INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX memories_user ON memories (agent_id, user_id) WHERE user_id != '';
    ALTER TABLE captures ADD COLUMN user_id TEXT NOT NULL DEFAULT '';
    UPDATE memories SET channel_private = 1 WHERE source = 'capture' AND channel_id != '';
    CREATE TABLE channel_speakers (
        channel_id TEXT NOT NULL,
        user_id    TEXT NOT NULL,
        PRIMARY KEY (channel_id, user_id)
    ) WITHOUT ROWID;
    CREATE INDEX channel_speakers_user ON channel_speakers (user_id);
    """,
    # 11: who said each recent turn (the request's user; '' when not known): a turn's
    # context is its own speaker's recent turns (sidecar/conversation/query_context.py).
    """
    ALTER TABLE injection_context ADD COLUMN speaker TEXT NOT NULL DEFAULT '';
    """,
    # 12: the memories of a scope without a user (the shared ones, an agent's own), read when
    # the scope is loaded on first use without walking the agent's users' rows.
    """
    CREATE INDEX memories_own ON memories (agent_id) WHERE user_id = '';
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)
