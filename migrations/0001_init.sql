-- memplug schema 1: capture, extraction, task state and assembly logs.
-- Every table, FTS index and trigger lives in a migration; nothing is created at run time.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Raw evidence, append-only. The natural key is (session_id, seq) and capture is
-- INSERT OR IGNORE on it; `id` is the stable integer rowid the FTS index points at
-- (an implicit rowid could be renumbered by VACUUM).
CREATE TABLE events (
    id            INTEGER PRIMARY KEY,
    session_id    TEXT    NOT NULL,
    seq           INTEGER NOT NULL,
    type          TEXT    NOT NULL,
    event_time    TEXT,
    turn          INTEGER,
    step          INTEGER,
    role          TEXT,
    text          TEXT    NOT NULL,
    content_json  TEXT,
    source_kind   TEXT,
    source_form   TEXT,
    tool_name     TEXT,
    call_id       TEXT,
    outcome       TEXT,
    is_error      INTEGER,
    entry_id      TEXT,
    parent_id     TEXT,
    cwd           TEXT,
    project       TEXT,    -- only when the host named one; sessions.project falls back to cwd
    generated     INTEGER NOT NULL DEFAULT 0 CHECK (generated IN (0, 1)),
    searchable    INTEGER NOT NULL DEFAULT 1 CHECK (searchable IN (0, 1)),
    store         TEXT    NOT NULL DEFAULT 'host' CHECK (store IN ('host', 'archive')),
    truncated     INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1)),
    text_chars    INTEGER NOT NULL,
    private_spans INTEGER NOT NULL DEFAULT 0,
    flags         INTEGER NOT NULL DEFAULT 0,
    content_hash  TEXT    NOT NULL,
    extra_json    TEXT,
    ingested_at   TEXT    NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE INDEX events_session_type ON events (session_id, type, seq);
CREATE INDEX events_session_turn ON events (session_id, turn);
CREATE INDEX events_session_entry ON events (session_id, entry_id) WHERE entry_id IS NOT NULL;

CREATE VIRTUAL TABLE events_fts USING fts5 (
    text,
    content = 'events',
    content_rowid = 'id',
    tokenize = 'trigram case_sensitive 0'
);

-- Live capture indexes each row through this trigger. The bulk path sets
-- meta.fts_deferred inside its own transaction, inserts a batch, indexes the new id
-- range with one statement and clears the flag before committing.
CREATE TRIGGER events_fts_insert AFTER INSERT ON events
WHEN new.searchable = 1 AND (SELECT value FROM meta WHERE key = 'fts_deferred') IS NULL
BEGIN
    INSERT INTO events_fts (rowid, text) VALUES (new.id, new.text);
END;

-- Only purge deletes events; it must take the row out of the index too.
CREATE TRIGGER events_fts_delete AFTER DELETE ON events
WHEN old.searchable = 1
BEGIN
    INSERT INTO events_fts (events_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;

-- Full text of events whose `text` was capped, keyed by `seq:<n>`.
CREATE TABLE archive (
    session_id TEXT    NOT NULL,
    ref        TEXT    NOT NULL,
    text       TEXT    NOT NULL,
    chars      INTEGER NOT NULL,
    PRIMARY KEY (session_id, ref)
);

CREATE TABLE sessions (
    session_id  TEXT PRIMARY KEY,
    cwd         TEXT,
    project     TEXT,
    origin      TEXT,
    first_time  TEXT,
    last_time   TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX sessions_project ON sessions (project);

CREATE TABLE checkpoints (
    session_id        TEXT PRIMARY KEY,
    last_event_seq    INTEGER,
    last_extract_seq  INTEGER,
    last_assembly_seq INTEGER
);

CREATE TABLE pending_extraction (
    session_id      TEXT    NOT NULL,
    seq             INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 1,
    last_error      TEXT    NOT NULL,
    first_failed_at TEXT    NOT NULL,
    last_failed_at  TEXT    NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- Derived memory: superseded, never overwritten. `rid` is the FTS rowid.
CREATE TABLE memory_items (
    rid              INTEGER PRIMARY KEY,
    id               TEXT    NOT NULL UNIQUE,
    session_id       TEXT    NOT NULL,
    project          TEXT,
    kind             TEXT    NOT NULL CHECK (kind IN
                         ('fact', 'decision', 'constraint', 'preference', 'proposal', 'open_question')),
    content          TEXT    NOT NULL,
    conditions_json  TEXT    NOT NULL DEFAULT '[]',
    scope_json       TEXT    NOT NULL DEFAULT '{}',
    numbers_json     TEXT    NOT NULL DEFAULT '[]',
    source_refs_json TEXT    NOT NULL DEFAULT '[]',
    evidence_type    TEXT    NOT NULL CHECK (evidence_type IN
                         ('user_explicit', 'assistant_proposal', 'skill', 'artifact_verified', 'inferred')),
    status           TEXT    NOT NULL DEFAULT 'active' CHECK (status IN
                         ('active', 'superseded', 'disputed', 'retracted')),
    supersedes_json  TEXT    NOT NULL DEFAULT '[]',
    superseded_by    TEXT,
    subject_key      TEXT,
    content_hash     TEXT    NOT NULL,
    extractor        TEXT    NOT NULL,
    derived_from_seq INTEGER NOT NULL,
    created_at       TEXT,
    updated_at       TEXT
);
CREATE UNIQUE INDEX memory_items_active_hash ON memory_items (session_id, content_hash)
    WHERE status = 'active';
CREATE INDEX memory_items_session_status ON memory_items (session_id, status, kind);
CREATE INDEX memory_items_subject ON memory_items (session_id, subject_key);
CREATE INDEX memory_items_project ON memory_items (project, status);

CREATE VIRTUAL TABLE memory_fts USING fts5 (
    content,
    content = 'memory_items',
    content_rowid = 'rid',
    tokenize = 'trigram case_sensitive 0'
);
CREATE TRIGGER memory_fts_insert AFTER INSERT ON memory_items BEGIN
    INSERT INTO memory_fts (rowid, content) VALUES (new.rid, new.content);
END;
CREATE TRIGGER memory_fts_delete AFTER DELETE ON memory_items BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, content) VALUES ('delete', old.rid, old.content);
END;
CREATE TRIGGER memory_fts_update AFTER UPDATE OF content ON memory_items BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, content) VALUES ('delete', old.rid, old.content);
    INSERT INTO memory_fts (rowid, content) VALUES (new.rid, new.content);
END;

-- Lifecycle audit: every status transition of an item, with who caused it.
CREATE TABLE memory_events (
    id          INTEGER PRIMARY KEY,
    memory_id   TEXT    NOT NULL,
    session_id  TEXT    NOT NULL,
    event       TEXT    NOT NULL CHECK (event IN
                    ('created', 'revised', 'superseded', 'retracted', 'disputed', 'reactivated', 'promoted')),
    at          TEXT,
    actor       TEXT    NOT NULL,
    source_seq  INTEGER,
    detail_json TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX memory_events_memory ON memory_events (memory_id, id);

-- Lifecycle changes a person made outside the event stream (`memory retract`,
-- `memory promote`). They are not derived, so rebuild replays them after extraction.
CREATE TABLE memory_actions (
    id         INTEGER PRIMARY KEY,
    memory_id  TEXT NOT NULL,
    action     TEXT NOT NULL CHECK (action IN ('retract', 'promote')),
    actor      TEXT NOT NULL,
    at         TEXT NOT NULL,
    note       TEXT
);

CREATE TABLE task_state (
    session_id      TEXT PRIMARY KEY,
    goal            TEXT,
    progress_json   TEXT NOT NULL DEFAULT '[]',
    blockers_json   TEXT NOT NULL DEFAULT '[]',
    open_items_json TEXT NOT NULL DEFAULT '[]',
    superseded_json TEXT NOT NULL DEFAULT '[]',
    updated_by_seq  INTEGER,
    updated_at      TEXT
);

-- One row per assembly attempt, successful or not; retention capped by config.
CREATE TABLE assembly_logs (
    id               INTEGER PRIMARY KEY,
    session_id       TEXT    NOT NULL,
    turn             INTEGER,
    step             INTEGER,
    trigger          TEXT    NOT NULL,
    created_at       TEXT    NOT NULL,
    query_text       TEXT,
    query_json       TEXT    NOT NULL DEFAULT '{}',
    budget           INTEGER NOT NULL,
    used_tokens      INTEGER NOT NULL,
    token_source     TEXT    NOT NULL CHECK (token_source IN ('estimate', 'exact')),
    content_hash     TEXT,
    injected         INTEGER NOT NULL CHECK (injected IN (0, 1)),
    message_seq      INTEGER,
    text             TEXT,
    sections_json    TEXT    NOT NULL DEFAULT '[]',
    included_json    TEXT    NOT NULL DEFAULT '[]',
    omitted_json     TEXT    NOT NULL DEFAULT '[]',
    coverage_json    TEXT    NOT NULL DEFAULT '{}',
    errors_json      TEXT    NOT NULL DEFAULT '[]',
    duration_ms      REAL
);
CREATE INDEX assembly_logs_session ON assembly_logs (session_id, turn, id);

-- Errors on paths that must never raise into the host (capture, extraction, hooks),
-- kept so that `memory status` can show them.
CREATE TABLE error_log (
    id         INTEGER PRIMARY KEY,
    at         TEXT NOT NULL,
    stage      TEXT NOT NULL,
    session_id TEXT,
    seq        INTEGER,
    message    TEXT NOT NULL
);
