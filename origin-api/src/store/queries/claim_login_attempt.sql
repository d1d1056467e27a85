UPDATE login_attempts SET failures = $1, locked_until = $2, last_at = $3
WHERE email = $4 AND failures = $5
