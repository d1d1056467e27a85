-- A page of one link's history, newest first, before the cursor (version, entry_id).
SELECT entry_id, version, action, actor, at, state, note
FROM link_history
WHERE link_id = $1 AND (version < $2 OR (version = $2 AND entry_id < $3))
ORDER BY version DESC, entry_id DESC
LIMIT $4
