SELECT token_hash, owner_id, role, email, created_by, created_at, expires_at, used_at
FROM invitations WHERE token_hash = $1
