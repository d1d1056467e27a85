-- The entry that made one version of a link (the first of that version's entries).
SELECT entry_id, version, action, actor, at, state, note
FROM link_history
WHERE link_id = $1 AND version = $2
ORDER BY entry_id
LIMIT 1
