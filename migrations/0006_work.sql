-- memplug schema 6: work records, what the agent did, derived from tool calls and results.

-- One row per tool call: the tool, the action's structural field (a file path, a
-- command's first line, a search pattern, a subagent's description), the outcome of its
-- result. Never the text of the tool's output. Derived from events, so `memory rebuild`
-- drops and re-derives it; `seq` is the call event, `result_seq` the result event.
CREATE TABLE work_records (
    rid         INTEGER PRIMARY KEY,
    session_id  TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    call_id     TEXT,
    tool        TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    target      TEXT    NOT NULL DEFAULT '',
    result_seq  INTEGER,
    outcome     TEXT,
    exit_code   INTEGER,
    turn        INTEGER,
    event_time  TEXT,
    project     TEXT,
    words       TEXT    NOT NULL,  -- indexed beside the target: joined names, tool, action words
    UNIQUE (session_id, seq)
);
CREATE INDEX work_records_call ON work_records (session_id, call_id) WHERE call_id IS NOT NULL;

CREATE VIRTUAL TABLE work_fts USING fts5 (
    target,
    words,
    content = 'work_records',
    content_rowid = 'rid',
    tokenize = 'trigram case_sensitive 0'
);
-- A derivation pass writes many records and settles most of them in the same pass: it
-- sets `work_fts_deferred` (the last rid indexed so far) and indexes the new rows once at
-- its end (store/work.py), so rows above the mark skip the per-row triggers.
CREATE TRIGGER work_fts_insert AFTER INSERT ON work_records
WHEN (SELECT value FROM meta WHERE key = 'work_fts_deferred') IS NULL BEGIN
    INSERT INTO work_fts (rowid, target, words) VALUES (new.rid, new.target, new.words);
END;
CREATE TRIGGER work_fts_delete AFTER DELETE ON work_records
WHEN old.rid <= coalesce(
    (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'work_fts_deferred'), old.rid
) BEGIN
    INSERT INTO work_fts (work_fts, rowid, target, words)
        VALUES ('delete', old.rid, old.target, old.words);
END;
CREATE TRIGGER work_fts_update AFTER UPDATE OF target, words ON work_records
WHEN old.rid <= coalesce(
    (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'work_fts_deferred'), old.rid
) BEGIN
    INSERT INTO work_fts (work_fts, rowid, target, words)
        VALUES ('delete', old.rid, old.target, old.words);
    INSERT INTO work_fts (rowid, target, words) VALUES (new.rid, new.target, new.words);
END;
