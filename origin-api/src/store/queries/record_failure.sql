UPDATE outbox SET attempts = attempts + 1, last_error = $1,
    next_attempt_at = $2, failed_at = $3 WHERE seq = $4
