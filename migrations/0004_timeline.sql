-- memplug schema: the timeline and the entity graph (derived state, see docs/timeline.md).
-- Every row is a function of one session's events and items: `memory rebuild` drops and
-- derives them again, identically. Ids are hashes of content and provenance, never row
-- numbers, so two databases that received the same events in any order hold the same rows.

-- What happened, and when: one row per tool outcome, compaction, file touched, session
-- start or end, and per memory item an event created (`kind = 'item'`: whether it shows
-- as a decision or a constraint is the item's kind when read, which a promotion can
-- change). `scope` is `project:<key>` or `session:<id>`.
-- `ingested_at` is not copied here: it is read from the events at `seq_to`, so that
-- the derived rows do not depend on when the evidence arrived.
CREATE TABLE timeline_entries (
    id            TEXT    PRIMARY KEY,
    session_id    TEXT    NOT NULL,
    scope         TEXT    NOT NULL,
    kind          TEXT    NOT NULL CHECK (kind IN
                      ('session_started', 'session_ended', 'item', 'tool_failed',
                       'tool_succeeded', 'compaction', 'file_touched')),
    seq_from      INTEGER NOT NULL,
    seq_to        INTEGER NOT NULL,
    event_time    TEXT,
    text          TEXT    NOT NULL,
    ref           TEXT,             -- the memory item or tool call the entry stands for
    entities_json TEXT    NOT NULL DEFAULT '[]'
) WITHOUT ROWID;
CREATE INDEX timeline_entries_session ON timeline_entries (session_id, seq_from);
CREATE INDEX timeline_entries_time ON timeline_entries (event_time, session_id, seq_from);

-- Entities as seen in one session: `entity` is the normalised id (`file:/a/b.py`,
-- `port:8080`, `package:django`, …); `name` the spelling first seen. The graph's node is
-- the union of a session's rows with the same `entity`.
CREATE TABLE graph_entities (
    session_id TEXT    NOT NULL,
    entity     TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    scope      TEXT    NOT NULL,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    mentions   INTEGER NOT NULL,
    PRIMARY KEY (session_id, entity)
) WITHOUT ROWID;
CREATE INDEX graph_entities_entity ON graph_entities (entity);
CREATE INDEX graph_entities_name ON graph_entities (name);

-- Edges as stated in one session, first and last statement kept. Nothing is marked
-- superseded here: for a relation that holds one value at a time, the edge stated
-- last (by event time, then session and seq) supersedes the others when the graph is
-- read, so a later or purged session can never leave a stale mark behind.
CREATE TABLE graph_edges (
    session_id      TEXT    NOT NULL,
    src             TEXT    NOT NULL,
    relation        TEXT    NOT NULL,
    dst             TEXT    NOT NULL,
    scope           TEXT    NOT NULL,
    first_seq       INTEGER NOT NULL,
    last_seq        INTEGER NOT NULL,
    last_event_time TEXT,
    statements      INTEGER NOT NULL,
    PRIMARY KEY (session_id, src, relation, dst)
) WITHOUT ROWID;
CREATE INDEX graph_edges_src ON graph_edges (src, relation);
CREATE INDEX graph_edges_dst ON graph_edges (dst);
