SELECT attempt_id, event_seq, event_type, attempted_at, result, status, error, duration_ms
FROM webhook_attempts
WHERE endpoint_id = $1 AND attempt_id < $2
ORDER BY attempt_id DESC
LIMIT $3
