DELETE FROM webhook_events WHERE created_at < $1
