UPDATE webhook_events SET ordinal = $1 + (seq - $2)
WHERE ordinal IS NULL AND seq >= $2 AND seq <= $3
