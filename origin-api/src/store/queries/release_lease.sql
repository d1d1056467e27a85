UPDATE leases SET expires_at = 0 WHERE name = $1 AND holder = $2 AND epoch = $3
