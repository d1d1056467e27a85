INSERT INTO login_attempts (email, failures, locked_until, last_at) VALUES ($1, 1, NULL, $2)
ON CONFLICT (email) DO NOTHING
