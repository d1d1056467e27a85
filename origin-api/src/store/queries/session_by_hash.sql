SELECT session_hash, user_id, csrf_token, epoch, created_at, last_seen_at, expires_at
FROM sessions WHERE session_hash = $1
