SELECT endpoint_id FROM webhook_endpoints WHERE state = 'active' LIMIT 1
