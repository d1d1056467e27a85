UPDATE idempotency SET response = $1 WHERE owner_id = $2 AND key = $3
