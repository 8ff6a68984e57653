-- memplug schema 2: where each host transcript was last read (Claude Code hooks).

-- One row per transcript a hook captures from. `state_json` is the reader's cursor
-- (offset, seq base, a digest of the bytes before the offset, turn counters, …), so
-- the next hook reads only what was appended since.
CREATE TABLE host_cursors (
    session_id  TEXT    PRIMARY KEY,
    host        TEXT    NOT NULL,
    path        TEXT    NOT NULL,
    byte_offset INTEGER NOT NULL,
    state_json  TEXT    NOT NULL,
    updated_at  TEXT    NOT NULL
);

-- Host record ids that resolve to another entry: a record that yielded no event (a
-- progress record) to its nearest kept ancestor, a later part of a split message to
-- the joined event. Ids that are an event's own `entry_id` are not repeated here.
CREATE TABLE host_links (
    session_id TEXT NOT NULL,
    uuid       TEXT NOT NULL,
    entry_id   TEXT,
    PRIMARY KEY (session_id, uuid)
) WITHOUT ROWID;
