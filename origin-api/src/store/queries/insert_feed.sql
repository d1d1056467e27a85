-- A new feed, due at once; nothing when the name is taken.
INSERT INTO feeds (name, source, format, refresh_every_s, created_at, due_at, hosts, urls)
VALUES ($1, $2, $3, $4, $5, $5, 0, 0)
ON CONFLICT (name) DO NOTHING
