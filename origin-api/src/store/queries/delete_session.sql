DELETE FROM sessions WHERE session_hash = $1
