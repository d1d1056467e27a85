INSERT INTO bans (kind, domain, code, host, reason, created_by, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING ban_id, kind, domain, code, host, reason, created_by, created_at, lifted_at
