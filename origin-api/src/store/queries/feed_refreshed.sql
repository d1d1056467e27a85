-- A refresh that read the feed: its counts, and when the next is due.
UPDATE feeds SET refreshed_at = $2, due_at = $3, hosts = $4, urls = $5, last_error = NULL
WHERE name = $1
