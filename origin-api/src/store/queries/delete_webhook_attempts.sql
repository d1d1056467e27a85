DELETE FROM webhook_attempts WHERE endpoint_id = $1
