UPDATE outbox SET failed_at = NULL, attempts = 0, next_attempt_at = 0
WHERE failed_at IS NOT NULL AND (CAST($1 AS BIGINT) IS NULL OR seq = $1)
