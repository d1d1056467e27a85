-- The live keys user $2 made in the dashboard for owner $3 (every owner when $3 is ''),
-- revoked at $1 (their maker lost access); their ids.
UPDATE api_keys SET revoked_at = $1
WHERE revoked_at IS NULL AND key_id IN (SELECT key_id FROM key_makers
    WHERE user_id = $2 AND ($3 = '' OR owner_id = $3))
RETURNING key_id
