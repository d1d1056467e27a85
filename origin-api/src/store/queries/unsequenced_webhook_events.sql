SELECT seq FROM webhook_events WHERE ordinal IS NULL ORDER BY seq LIMIT $1
