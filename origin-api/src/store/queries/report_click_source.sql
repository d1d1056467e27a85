INSERT INTO click_sources (source, complete_to, reported_at) VALUES ($1, $2, $3)
ON CONFLICT (source) DO UPDATE
SET complete_to = excluded.complete_to, reported_at = excluded.reported_at
