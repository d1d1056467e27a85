INSERT INTO sessions (session_hash, user_id, csrf_token, epoch, created_at, last_seen_at,
                      expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
