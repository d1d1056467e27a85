UPDATE webhook_endpoints SET delivered_through = $2, attempts = $3, failing_since = $4,
    next_attempt_at = $5, state = $6, disabled_reason = $7, updated_at = $8
WHERE endpoint_id = $1 AND delivered_through = $9 AND state = 'active'
