INSERT INTO id_segments (name, max_id, step, updated_at) VALUES ($1, 0, $2, $3)
ON CONFLICT (name) DO NOTHING
