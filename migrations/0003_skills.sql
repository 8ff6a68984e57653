-- memplug schema 3: skills as versioned rules, user overrides of them, validation runs.

-- Every distinct content of a skill file. A skill is named by its frontmatter `name`
-- (else its directory); a changed file adds a version that supersedes the current one.
CREATE TABLE skill_versions (
    id           INTEGER PRIMARY KEY,
    name         TEXT    NOT NULL,
    source       TEXT    NOT NULL,
    path         TEXT    NOT NULL,
    content      TEXT    NOT NULL,
    content_hash TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    supersedes   INTEGER REFERENCES skill_versions (id),
    created_at   TEXT    NOT NULL,
    UNIQUE (name, version)
);

-- The current state of each skill: its latest version and what its frontmatter says.
-- `removed_at` is set when its file was gone at an ingest of the directory it came from.
CREATE TABLE skill_files (
    name        TEXT    PRIMARY KEY,
    path        TEXT    NOT NULL,
    source      TEXT    NOT NULL,
    version_id  INTEGER NOT NULL REFERENCES skill_versions (id),
    version     INTEGER NOT NULL,
    enabled     INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    description TEXT,
    when_to_use TEXT,
    invocation  TEXT,
    removed_at  TEXT,
    updated_at  TEXT    NOT NULL
);

-- One row per rule line of a skill. A rule that left its file is made inactive, never
-- deleted; it comes back active when the line does.
CREATE TABLE rules (
    id           TEXT    PRIMARY KEY,
    skill_name   TEXT    NOT NULL,
    rule_key     TEXT    NOT NULL,
    text         TEXT    NOT NULL,
    category     TEXT    NOT NULL CHECK (category IN
                          ('workflow', 'constraint', 'style', 'current_state', 'reference')),
    scope_json   TEXT    NOT NULL DEFAULT '{}',
    source_path  TEXT    NOT NULL,
    source_line  INTEGER NOT NULL,
    active       INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
    content_hash TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    UNIQUE (skill_name, rule_key)
);

-- What a person changed about a rule without editing its file (`memory rules override`);
-- NULL leaves the parsed value in force.
CREATE TABLE rule_overrides (
    rule_id    TEXT PRIMARY KEY,
    category   TEXT CHECK (category IS NULL OR category IN
                        ('workflow', 'constraint', 'style', 'current_state', 'reference')),
    active     INTEGER CHECK (active IS NULL OR active IN (0, 1)),
    scope_json TEXT,
    updated_at TEXT NOT NULL
);

-- One row per validation run over a committed assistant message.
CREATE TABLE validation_logs (
    id               INTEGER PRIMARY KEY,
    session_id       TEXT    NOT NULL,
    event_seq        INTEGER NOT NULL,
    target           TEXT    NOT NULL,
    trigger          TEXT    NOT NULL,
    created_at       TEXT    NOT NULL,
    ok               INTEGER NOT NULL CHECK (ok IN (0, 1)),
    checked          INTEGER NOT NULL,
    skipped          INTEGER NOT NULL,
    deterministic    INTEGER NOT NULL CHECK (deterministic IN (0, 1)),
    blocked          INTEGER NOT NULL CHECK (blocked IN (0, 1)),
    repair_attempt   INTEGER NOT NULL DEFAULT 0,
    violations_json  TEXT    NOT NULL DEFAULT '[]',
    errors_json      TEXT    NOT NULL DEFAULT '[]'
);
CREATE INDEX validation_logs_session ON validation_logs (session_id, id);
