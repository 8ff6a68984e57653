-- memplug schema 11: team memory through PostgreSQL (docs/sync.md).
--
-- The server holds the shared event log; these tables hold this machine's side of it:
-- where the server is (never a password), which projects it shares, how far it has
-- pushed and pulled, the tombstones purges wrote, and conflicts kept apart.
CREATE TABLE sync_remote (
    id               INTEGER PRIMARY KEY CHECK (id = 1),
    url              TEXT NOT NULL,          -- a libpq connection string with no password
    origin           TEXT NOT NULL,          -- this machine's id, chosen at `memory sync init`
    pull_cursor      TEXT NOT NULL DEFAULT '0:0',  -- xid:id of the last event row read
    tombstone_cursor TEXT NOT NULL DEFAULT '0:0',  -- xid:id of the last tombstone read
    created_at       TEXT NOT NULL,
    last_sync_at     TEXT
);

-- Shared projects and, per project, the last `events.id` pushed: sharing a project
-- later pushes its earlier events too.
CREATE TABLE sync_projects (
    project   TEXT PRIMARY KEY,
    pushed_id INTEGER NOT NULL DEFAULT 0,
    shared_at TEXT NOT NULL
);

-- Sessions that came from the server: never pushed back.
CREATE TABLE sync_pulled (
    session_id TEXT PRIMARY KEY,
    origin     TEXT NOT NULL
);

-- Purges of shared data: `outbox` until the server has them, `sent` after.
CREATE TABLE sync_tombstones (
    id           INTEGER PRIMARY KEY,
    session_key  TEXT NOT NULL,              -- the server's session key
    before_epoch REAL,                       -- NULL: the whole session; else events before it
    state        TEXT NOT NULL CHECK (state IN ('outbox', 'sent')),
    created_at   TEXT NOT NULL
);
CREATE INDEX sync_tombstones_state ON sync_tombstones (state, id);

-- A pulled event whose key this file already holds with other content: kept apart,
-- never written over the local one.
CREATE TABLE sync_conflicts (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    origin       TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    body         TEXT NOT NULL,
    found_at     TEXT NOT NULL,
    UNIQUE (session_id, seq, content_hash)
);
