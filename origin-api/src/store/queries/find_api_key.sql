SELECT key_id, owner_id, name, secret_hash, scopes, created_at, revoked_at
FROM api_keys WHERE key_id = $1
