UPDATE api_keys SET revoked_at = $1 WHERE key_id = $2 AND revoked_at IS NULL
