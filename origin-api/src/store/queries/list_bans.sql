SELECT ban_id, kind, domain, code, host, reason, created_by, created_at, lifted_at
FROM bans
ORDER BY ban_id DESC
