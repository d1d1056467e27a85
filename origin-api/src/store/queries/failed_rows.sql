SELECT seq, lane, kind, route_key, version, attempts, last_error, created_at, failed_at
FROM outbox WHERE failed_at IS NOT NULL AND seq > $1 ORDER BY seq LIMIT $2
