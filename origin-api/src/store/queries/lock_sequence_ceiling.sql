UPDATE id_segments SET updated_at = updated_at WHERE name = $1 RETURNING max_id, step
