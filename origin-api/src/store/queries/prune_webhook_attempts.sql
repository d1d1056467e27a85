DELETE FROM webhook_attempts WHERE attempted_at < $1
