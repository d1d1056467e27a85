INSERT INTO api_keys (key_id, owner_id, name, secret_hash, scopes, created_at)
VALUES ($1, $2, $3, $4, $5, $6)
