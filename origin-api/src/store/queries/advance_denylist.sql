INSERT INTO id_segments (name, max_id, step, updated_at) VALUES ('deny', 1, 1, $1)
ON CONFLICT (name) DO UPDATE SET max_id = id_segments.max_id + 1, updated_at = excluded.updated_at
RETURNING max_id
