UPDATE bans SET lifted_at = $1 WHERE ban_id = $2 AND lifted_at IS NULL
RETURNING ban_id, kind, domain, code, host, reason, created_by, created_at, lifted_at
