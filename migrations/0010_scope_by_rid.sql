-- memplug schema 10: narrow indexes that answer "is this row in scope?" from its rowid.
--
-- A term search walks the FTS index newest first and keeps the rows in the call's scope
-- (store/search.py `newest_match_ids`). Joined to the table, each match read its whole
-- row — a work record's `words`, a memory item's content and JSON — for the session and
-- status alone; over a project scope most matches are another project's, so a term read
-- thousands of wide rows at 1M events. These hold only what the scope test reads, keyed
-- by rowid, so the walk reads small, dense pages instead.
CREATE INDEX work_records_rid_scope ON work_records (rid, session_id);
CREATE INDEX memory_items_rid_scope ON memory_items (rid, session_id, status);
