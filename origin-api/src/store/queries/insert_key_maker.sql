INSERT INTO key_makers (key_id, user_id, owner_id, created_at) VALUES ($1, $2, $3, $4)
