-- memplug schema: vectors as int8 with a scale, and the coarse cell each one is in.

-- A vector is now `scale x` its int8 bytes (a query scores it with integer arithmetic,
-- no numpy on the hook's path). `cell` is the provider's nearest centroid to the vector
-- (NULL for a provider without centroids): a query over a large scope reads the cells
-- nearest to it first instead of every vector. Vectors of the float16 format belong to
-- an older model version and are replaced by `memory rebuild --vectors`.
ALTER TABLE event_vectors ADD COLUMN scale REAL;
ALTER TABLE event_vectors ADD COLUMN cell INTEGER;
-- Within a cell, rows in the events' own (session, seq) order: the same in every
-- database, so a scan cut short reads the same vectors everywhere.
CREATE INDEX event_vectors_cell ON event_vectors (model_id, cell, session_id, seq);
