SELECT link_id FROM links WHERE domain = $1 LIMIT 1
