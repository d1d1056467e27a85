SELECT MIN(created_at) AS "created_at: i64" FROM webhook_events WHERE ordinal IS NULL
