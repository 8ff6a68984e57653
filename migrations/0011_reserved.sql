-- memplug schema 11: a placeholder on branch i28 only. Number 0011 belongs to another
-- branch; the migration runner refuses a gap, so this empty step lets 0012 apply before
-- the merge. At the merge the real 0011 replaces this file.
SELECT 1;
