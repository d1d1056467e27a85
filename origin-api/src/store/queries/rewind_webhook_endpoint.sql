UPDATE webhook_endpoints SET delivered_through = $2, state = 'active', disabled_reason = NULL,
    attempts = 0, failing_since = NULL, next_attempt_at = 0, updated_at = $3
WHERE endpoint_id = $1
