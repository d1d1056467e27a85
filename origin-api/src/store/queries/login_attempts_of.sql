SELECT failures, locked_until, last_at FROM login_attempts WHERE email = $1
