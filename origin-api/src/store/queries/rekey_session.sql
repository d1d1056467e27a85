UPDATE sessions SET epoch = $1 WHERE session_hash = $2
