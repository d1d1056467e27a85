INSERT INTO foreign_codes (domain, opened_at, until_at) VALUES ($1, $2, $3)
ON CONFLICT (domain) DO UPDATE SET opened_at = excluded.opened_at, until_at = excluded.until_at
