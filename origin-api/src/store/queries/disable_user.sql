UPDATE users SET disabled_at = $1, session_epoch = session_epoch + 1
WHERE user_id = $2 AND disabled_at IS NULL
