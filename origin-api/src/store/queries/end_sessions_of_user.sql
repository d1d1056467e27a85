UPDATE users SET session_epoch = session_epoch + 1 WHERE user_id = $1
