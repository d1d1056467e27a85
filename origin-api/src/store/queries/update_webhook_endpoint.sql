UPDATE webhook_endpoints SET url = $2, description = $3, event_types = $4, state = $5,
    disabled_reason = $6, attempts = $7, failing_since = $8, next_attempt_at = $9, updated_at = $10
WHERE endpoint_id = $1
