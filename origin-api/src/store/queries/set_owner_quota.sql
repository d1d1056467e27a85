-- The operator sets owner $1 limits (NULL: the default; -1: none).
INSERT INTO owner_quotas (owner_id, max_links, max_links_per_day) VALUES ($1, $2, $3)
ON CONFLICT (owner_id) DO UPDATE SET max_links = $2, max_links_per_day = $3
