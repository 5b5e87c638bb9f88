"""Memory's tables in ``memory/memory.db`` (see db.py for why not fetch.db).

The count of applied migrations is kept in ``memory_meta`` (key ``schema``), not in
``user_version``, so the tables could move into another file unchanged. Append to
``MIGRATIONS``; never edit one.

One table holds both layers (``kind``: fact | preference | learning | archive) so one
FTS index and one vector index answer a search over both. The vector index depends on
the embedding dimension, so it is created by ``ensure_vec_index`` and rebuilt when the
configured dimension changes; exact float32 vectors live in a plain table, from which
the index (binary-quantized, see search.py) can always be rebuilt.
"""

from __future__ import annotations

import hashlib
from typing import Any

MIGRATIONS: tuple[str, ...] = (
    # 1: items, exact vectors, archive watermarks, keyword index kept in sync by triggers.
    """
    CREATE TABLE memory_items (
        id         INTEGER PRIMARY KEY,
        kind       TEXT NOT NULL,           -- fact | preference | learning | archive
        content    TEXT NOT NULL,           -- the memory, or an archive chunk's summary
        tags       TEXT NOT NULL DEFAULT '',-- space separated
        source     TEXT NOT NULL,           -- owner | orchestrator | harness:<name> | archive
        thread     TEXT,                    -- archive: the session ("channel:chat")
        first_msg  INTEGER,                 -- archive: messages.id range, inclusive
        last_msg   INTEGER,
        started    REAL,                    -- archive: time of the first and last message
        ended      REAL,
        path       TEXT,                    -- archive: the transcript, relative to FETCH_HOME
        created    REAL NOT NULL,
        updated    REAL NOT NULL,
        embedded   TEXT                     -- "model/dims" of its vector; NULL: none yet
    );
    CREATE UNIQUE INDEX memory_items_chunk ON memory_items(thread, first_msg)
        WHERE kind = 'archive';
    CREATE INDEX memory_items_kind ON memory_items(kind, updated);
    CREATE INDEX memory_items_embedded ON memory_items(embedded);
    CREATE TABLE memory_vectors (
        id   INTEGER PRIMARY KEY REFERENCES memory_items(id) ON DELETE CASCADE,
        vec  BLOB NOT NULL                  -- float32, unit length
    );
    CREATE TABLE memory_watermarks (
        thread    TEXT PRIMARY KEY,         -- messages.session
        last_msg  INTEGER NOT NULL          -- every message up to here is archived
    );
    CREATE VIRTUAL TABLE memory_fts USING fts5(
        content, tags, content='memory_items', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER memory_items_ai AFTER INSERT ON memory_items BEGIN
        INSERT INTO memory_fts(rowid, content, tags) VALUES (new.id, new.content, new.tags);
    END;
    CREATE TRIGGER memory_items_ad AFTER DELETE ON memory_items BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, content, tags)
            VALUES ('delete', old.id, old.content, old.tags);
    END;
    CREATE TRIGGER memory_items_au AFTER UPDATE OF content, tags ON memory_items BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, content, tags)
            VALUES ('delete', old.id, old.content, old.tags);
        INSERT INTO memory_fts(rowid, content, tags) VALUES (new.id, new.content, new.tags);
    END;
    """,
    # 2: whose memory it is (orchestrator/permissions/): "owner", a member's name, or an
    # allowlisted sender's "channel:id". A member sees and changes only their own; only
    # the owner's feed the owner's tasks. Archives are the owner's.
    """
    ALTER TABLE memory_items ADD COLUMN subject TEXT NOT NULL DEFAULT 'owner';
    CREATE INDEX memory_items_subject ON memory_items(subject, kind, updated);
    """,
    # 3: the chat (session, "channel:chat") of the task whose kennel wrote a memory. A
    # kennel's write may only merge into a row of its own source and chat (items.py), so
    # a near-duplicate never rewrites the owner's memory or another chat's.
    """
    ALTER TABLE memory_items ADD COLUMN chat TEXT;
    CREATE INDEX memory_items_author ON memory_items(subject, source, chat)
        WHERE kind != 'archive';
    """,
    # 4: a memory's text key (``text_key``: a 64-bit hash of its case-folded, space-
    # normalised text) so a word-for-word repeat is found through an index, in
    # O(log rows), not by comparing every row of the subject (339 ms at 1M memories).
    # Archives have none. Existing rows get theirs here (``memory_text_key``, migrate).
    """
    ALTER TABLE memory_items ADD COLUMN content_key INTEGER;
    UPDATE memory_items SET content_key = memory_text_key(content) WHERE kind != 'archive';
    CREATE INDEX memory_items_content_key ON memory_items(subject, content_key)
        WHERE kind != 'archive';
    """,
)


def text_key(content: str) -> int:
    """The key of a memory's text: equal for texts that differ only in case or spacing.
    A hash, so the index stays small; a match is confirmed on the text itself."""
    norm = " ".join(content.split()).casefold().encode()
    return int.from_bytes(hashlib.blake2b(norm, digest_size=8).digest(), "big", signed=True)


def same_text(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _statements(script: str) -> list[str]:
    """Split on ';' but keep trigger bodies (BEGIN … END;) whole."""
    out: list[str] = []
    current: list[str] = []
    depth = 0
    for line in script.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("--"):
            continue
        current.append(line)
        if stripped.upper().endswith("BEGIN"):
            depth += 1
        if stripped.upper() == "END;":
            depth -= 1
        if stripped.endswith(";") and depth == 0:
            out.append("\n".join(current))
            current = []
    if current:
        out.append("\n".join(current))
    return out


def is_pg(conn: Any) -> bool:
    """Memory on PostgreSQL (pg.py's PgConn), not its own SQLite file."""
    return getattr(conn, "dialect", "sqlite") == "postgresql"


def migrate(conn: Any) -> None:
    if is_pg(conn):
        from orchestrator.memory import pg_schema

        pg_schema.migrate(conn)
        return
    # Migration 4 fills content_key for the rows it finds with this function.
    conn.create_function("memory_text_key", 1, text_key, deterministic=True)
    conn.execute("CREATE TABLE IF NOT EXISTS memory_meta (key TEXT PRIMARY KEY, value TEXT)")
    row = conn.execute("SELECT value FROM memory_meta WHERE key='schema'").fetchone()
    version = int(row[0]) if row else 0
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(script):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO memory_meta(key, value) VALUES ('schema', ?) ON CONFLICT"
                "(key) DO UPDATE SET value=excluded.value",
                (str(number),),
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def meta(conn: Any, key: str) -> str | None:
    row = conn.execute("SELECT value FROM memory_meta WHERE key=?", (key,)).fetchone()
    return str(row[0]) if row else None


def set_meta(conn: Any, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO memory_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE"
        " SET value=excluded.value",
        (key, value),
    )


def ensure_vec_index(conn: Any, dims: int) -> bool:
    """Create the binary vector index for ``dims``; True if it was (re)created empty.

    ``kind`` is a metadata column so a KNN can be limited to one layer (dedup looks at
    memories only) without scanning the other.
    """
    if is_pg(conn):
        from orchestrator.memory import pg_schema

        return pg_schema.ensure_vec_index(conn, dims)
    if meta(conn, "vec_dims") == str(dims):
        return False
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DROP TABLE IF EXISTS memory_vec_bits")
        conn.execute(
            f"CREATE VIRTUAL TABLE memory_vec_bits USING vec0("
            f"embedding bit[{int(dims)}], layer text)"
        )
        conn.execute(
            "INSERT INTO memory_vec_bits(rowid, embedding, layer) SELECT v.id,"
            " vec_quantize_binary(vec_f32(v.vec)), CASE i.kind WHEN 'archive' THEN"
            " 'archive' ELSE 'memory' END FROM memory_vectors v JOIN memory_items i"
            " ON i.id = v.id WHERE length(v.vec) = ?",
            (4 * dims,),
        )
        set_meta(conn, "vec_dims", str(dims))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return True
