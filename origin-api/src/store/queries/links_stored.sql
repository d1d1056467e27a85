-- Links stored, tombstones included: the link ids in use.
SELECT COUNT(*) AS links FROM links
