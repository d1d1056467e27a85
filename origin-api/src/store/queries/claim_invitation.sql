UPDATE invitations SET used_at = $1
WHERE token_hash = $2 AND used_at IS NULL AND expires_at > $1
