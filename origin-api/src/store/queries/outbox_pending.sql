SELECT seq, lane, kind, route_key, version, payload, created_at, attempts
FROM outbox
WHERE published_at IS NULL AND failed_at IS NULL AND lane = $1 AND next_attempt_at <= $2
ORDER BY seq
LIMIT $3
