SELECT key_id, owner_id, name, secret_hash, scopes, created_at, revoked_at
FROM api_keys
WHERE owner_id = $1
ORDER BY created_at DESC, key_id
