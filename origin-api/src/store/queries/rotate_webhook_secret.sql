UPDATE webhook_endpoints SET previous_secret = secret, previous_until = $3, secret = $2, updated_at = $4
WHERE endpoint_id = $1
