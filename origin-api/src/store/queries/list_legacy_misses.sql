SELECT m.code, m.visits, m.bot_visits, m.first_seen_at, m.last_seen_at
FROM legacy_misses m
WHERE m.domain = $1 AND (m.visits < $2 OR (m.visits = $2 AND m.code > $3))
    AND NOT EXISTS (SELECT 1 FROM links l WHERE l.domain = m.domain AND l.code = m.code)
ORDER BY m.visits DESC, m.code
LIMIT $4
