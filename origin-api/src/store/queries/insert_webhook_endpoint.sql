INSERT INTO webhook_endpoints (endpoint_id, owner_id, url, description, event_types, secret,
    state, delivered_through, attempts, next_attempt_at, created_by, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, 'active', COALESCE((SELECT MAX(ordinal) FROM webhook_events), 0),
    0, 0, $7, $8, $8)
