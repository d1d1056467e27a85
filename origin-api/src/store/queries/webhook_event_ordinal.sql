SELECT ordinal FROM webhook_events WHERE seq = $1
