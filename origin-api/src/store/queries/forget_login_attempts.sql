DELETE FROM login_attempts WHERE email = $1
