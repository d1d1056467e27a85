DELETE FROM webhook_endpoints WHERE endpoint_id = $1
