SELECT DISTINCT owner_id FROM links WHERE domain = $1 ORDER BY owner_id
