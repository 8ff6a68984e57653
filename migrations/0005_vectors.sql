-- memplug schema: vectors of the optional semantic provider, in the same file.

-- Each provider model that wrote vectors: a vector names its model, so a changed
-- provider or version is seen as stale rather than silently compared.
CREATE TABLE vector_models (
    id         INTEGER PRIMARY KEY,
    provider   TEXT    NOT NULL,
    version    TEXT    NOT NULL,
    dimensions INTEGER NOT NULL,
    UNIQUE (provider, version)
);

-- One vector per embedded event (float16, unit length). Deleting an event deletes
-- its vector, so purge removes vectors with their events. `session_id` and `seq`
-- repeat the event's, so a scoped scan reads vectors without reading the events' text
-- and breaks ties by the events' own key (ids differ between databases).
CREATE TABLE event_vectors (
    event_id   INTEGER PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
    model_id   INTEGER NOT NULL REFERENCES vector_models (id),
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    vector     BLOB    NOT NULL
);
CREATE INDEX event_vectors_scope ON event_vectors (model_id, session_id);
