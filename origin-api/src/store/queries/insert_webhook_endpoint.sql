-- A new endpoint, unless its owner (or, for an endpoint of every owner's events, the
-- operators) holds $9 already: one statement, so two creates cannot both pass a count.
INSERT INTO webhook_endpoints (endpoint_id, owner_id, url, description, event_types, secret,
    state, delivered_through, attempts, next_attempt_at, created_by, created_at, updated_at)
SELECT $1, $2, $3, $4, $5, $6, 'active', COALESCE((SELECT MAX(ordinal) FROM webhook_events), 0),
    0, 0, $7, $8, $8
WHERE (SELECT COUNT(*) FROM webhook_endpoints
    WHERE COALESCE(owner_id, '') = COALESCE($2, '')) < $9
