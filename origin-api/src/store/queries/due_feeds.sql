-- The feeds due for a refresh by $1, the longest overdue first.
SELECT name, source, format, refresh_every_s, created_at, refreshed_at, due_at, hosts, urls, last_error
FROM feeds
WHERE due_at <= $1
ORDER BY due_at, name
