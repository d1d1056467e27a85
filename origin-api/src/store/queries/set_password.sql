UPDATE users SET password_hash = $1, session_epoch = session_epoch + 1 WHERE user_id = $2
RETURNING session_epoch
