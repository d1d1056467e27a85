SELECT link_id FROM limit_republish ORDER BY link_id LIMIT $1
