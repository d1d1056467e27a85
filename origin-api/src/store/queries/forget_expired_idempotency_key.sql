DELETE FROM idempotency WHERE owner_id = $1 AND key = $2 AND created_at < $3
