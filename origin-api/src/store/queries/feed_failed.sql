-- A refresh that could not read the feed: the entries stay as they were.
UPDATE feeds SET due_at = $2, last_error = $3 WHERE name = $1
