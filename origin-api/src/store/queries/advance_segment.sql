INSERT INTO id_segments (name, max_id, step, updated_at) VALUES ($1, $2, $2, $3)
ON CONFLICT (name) DO UPDATE SET max_id = id_segments.max_id + excluded.step,
    step = excluded.step, updated_at = excluded.updated_at RETURNING max_id, step
