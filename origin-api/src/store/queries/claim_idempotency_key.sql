INSERT INTO idempotency (owner_id, key, request_hash, state, link_id, response, created_at)
VALUES ($1, $2, $3, 'succeeded', $4, $5, $6) ON CONFLICT (owner_id, key) DO NOTHING
