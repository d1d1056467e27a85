SELECT MAX(ordinal) AS "ordinal: i64" FROM webhook_events
