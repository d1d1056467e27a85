DELETE FROM sessions WHERE user_id = $1 AND session_hash <> $2
