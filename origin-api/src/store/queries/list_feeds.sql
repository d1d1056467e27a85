-- Every feed, by name.
SELECT name, source, format, refresh_every_s, created_at, refreshed_at, due_at, hosts, urls, last_error
FROM feeds
ORDER BY name
