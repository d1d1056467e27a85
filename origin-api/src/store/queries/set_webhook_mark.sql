INSERT INTO webhook_marks (name, at) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET at = excluded.at
