SELECT ban_id, kind, domain, code, host, reason, created_by, created_at, lifted_at
FROM bans
WHERE lifted_at IS NULL
ORDER BY ban_id DESC
