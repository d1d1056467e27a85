INSERT INTO invitations (token_hash, owner_id, role, email, created_by, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
