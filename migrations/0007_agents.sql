-- memplug schema 7: scopes on memory items and the agent tag (see docs/timeline.md, Scopes).
--
-- A derived row made from an agent's events (a host names the agent in the event's
-- `agent_id` field, kept in `events.extra_json`: Claude Code's subagent transcripts)
-- carries that agent in `agent`, beside its `scope`, so `project:<key>` still finds it
-- and `agent:<id>` finds only it. NULL when the host named no agent.
-- Memory items get the `scope` column the timeline and graph rows already have.
-- Existing rows are filled from the events they were made from, as a rebuild would.

ALTER TABLE memory_items ADD COLUMN scope TEXT;
ALTER TABLE memory_items ADD COLUMN agent TEXT;
ALTER TABLE timeline_entries ADD COLUMN agent TEXT;
ALTER TABLE graph_entities ADD COLUMN agent TEXT;
ALTER TABLE graph_edges ADD COLUMN agent TEXT;

UPDATE memory_items SET scope = CASE
    WHEN project IS NOT NULL AND project <> '' THEN 'project:' || project
    ELSE 'session:' || session_id END;

-- The agent of the event at (session, seq): a non-empty string `agent_id`, else NULL.
CREATE TEMP VIEW agent_of_event AS
SELECT session_id, seq, json_extract(extra_json, '$.agent_id') AS agent
FROM events
WHERE extra_json LIKE '%"agent_id"%' AND json_valid(extra_json)
  AND json_type(extra_json, '$.agent_id') = 'text'
  AND json_extract(extra_json, '$.agent_id') <> '';

UPDATE memory_items SET agent = (SELECT a.agent FROM agent_of_event a
    WHERE a.session_id = memory_items.session_id AND a.seq = memory_items.derived_from_seq);
UPDATE timeline_entries SET agent = (SELECT a.agent FROM agent_of_event a
    WHERE a.session_id = timeline_entries.session_id AND a.seq = timeline_entries.seq_to);
UPDATE graph_entities SET agent = (SELECT a.agent FROM agent_of_event a
    WHERE a.session_id = graph_entities.session_id AND a.seq = graph_entities.first_seq);
UPDATE graph_edges SET agent = (SELECT a.agent FROM agent_of_event a
    WHERE a.session_id = graph_edges.session_id AND a.seq = graph_edges.first_seq);
DROP VIEW agent_of_event;

CREATE INDEX memory_items_scope ON memory_items (scope, status);
CREATE INDEX memory_items_agent ON memory_items (agent) WHERE agent IS NOT NULL;
CREATE INDEX timeline_entries_agent ON timeline_entries (agent) WHERE agent IS NOT NULL;
CREATE INDEX graph_entities_agent ON graph_entities (agent) WHERE agent IS NOT NULL;
CREATE INDEX graph_edges_agent ON graph_edges (agent) WHERE agent IS NOT NULL;
