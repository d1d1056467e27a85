UPDATE sessions SET last_seen_at = $1, expires_at = $2 WHERE session_hash = $3
