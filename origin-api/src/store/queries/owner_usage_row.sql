-- An owner's usage row, made at zero the first time (a new owner's first create).
INSERT INTO owner_usage (owner_id, live_links, day, created_on_day) VALUES ($1, 0, $2, 0)
ON CONFLICT (owner_id) DO NOTHING
