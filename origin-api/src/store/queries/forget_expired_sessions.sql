DELETE FROM sessions WHERE expires_at < $1
