DELETE FROM login_attempts WHERE last_at < $1
