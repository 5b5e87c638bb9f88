"""Versioned schema. Append a new entry to migrate; never edit a shipped one.

``PRAGMA user_version`` records how many entries have been applied.
"""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
    # 1: the skeleton
    """
    CREATE TABLE sessions (
        key      TEXT PRIMARY KEY,
        channel  TEXT NOT NULL,
        chat     TEXT NOT NULL,
        state    TEXT NOT NULL,
        data     TEXT NOT NULL DEFAULT '{}',
        updated  REAL NOT NULL
    );
    CREATE TABLE inbound (
        channel    TEXT NOT NULL,
        message_id TEXT NOT NULL,
        session    TEXT NOT NULL,
        payload    TEXT NOT NULL,
        status     TEXT NOT NULL,          -- queued | done
        received   REAL NOT NULL,
        PRIMARY KEY (channel, message_id)
    );
    CREATE INDEX inbound_status ON inbound(status, received);
    CREATE TABLE messages (
        id          INTEGER PRIMARY KEY,
        session     TEXT NOT NULL,
        direction   TEXT NOT NULL,         -- in | out
        text        TEXT NOT NULL,
        ts          REAL NOT NULL,
        model       TEXT,
        tokens_in   INTEGER NOT NULL DEFAULT 0,
        tokens_out  INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX messages_session ON messages(session, id);
    CREATE TABLE tasks (
        id          INTEGER PRIMARY KEY,
        session     TEXT NOT NULL,
        repo        TEXT NOT NULL,
        prompt      TEXT NOT NULL,
        harness     TEXT NOT NULL,
        -- running | proposed | committed | rejected | expired | failed | stopped | empty
        -- | interrupted
        status      TEXT NOT NULL,
        created     REAL NOT NULL,
        finished    REAL,
        result      TEXT,
        tokens_in   INTEGER NOT NULL DEFAULT 0,
        tokens_out  INTEGER NOT NULL DEFAULT 0,
        cost_usd    REAL NOT NULL DEFAULT 0
    );
    CREATE TABLE approvals (
        id          INTEGER PRIMARY KEY,
        session     TEXT NOT NULL,
        task_id     INTEGER NOT NULL REFERENCES tasks(id),
        repo        TEXT NOT NULL,
        nonce       TEXT NOT NULL,
        diff_hash   TEXT NOT NULL,
        base_sha    TEXT NOT NULL,
        owner       TEXT NOT NULL,
        status      TEXT NOT NULL,         -- pending | approved | rejected | expired | superseded
        created     REAL NOT NULL,
        expires_at  REAL NOT NULL,
        decided     REAL
    );
    CREATE TABLE commits (
        id          INTEGER PRIMARY KEY,
        session     TEXT NOT NULL,
        repo        TEXT NOT NULL,
        sha         TEXT NOT NULL,
        parent      TEXT NOT NULL,
        task_id     INTEGER,
        summary     TEXT NOT NULL,
        created     REAL NOT NULL,
        undone_by   TEXT
    );
    """,
    # 2: /status sums tokens per session; only rows that carry tokens are indexed.
    """
    CREATE INDEX messages_tokens ON messages(session) WHERE tokens_in > 0 OR tokens_out > 0;
    """,
    # 3: the test commands a harness ran, for the completion message.
    """
    ALTER TABLE tasks ADD COLUMN checks TEXT NOT NULL DEFAULT '[]';
    """,
)
