SELECT endpoint_id, owner_id, url, description, event_types, secret, previous_secret, previous_until,
    state, disabled_reason, delivered_through, attempts, failing_since, next_attempt_at, created_by,
    created_at, updated_at
FROM webhook_endpoints WHERE state = 'active'
