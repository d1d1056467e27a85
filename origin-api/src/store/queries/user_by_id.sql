SELECT user_id, email, password_hash, operator, created_at, disabled_at, session_epoch
FROM users WHERE user_id = $1
