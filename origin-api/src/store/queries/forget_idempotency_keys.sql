DELETE FROM idempotency WHERE created_at < $1
