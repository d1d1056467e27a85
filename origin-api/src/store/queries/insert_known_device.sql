INSERT INTO known_devices (device_hash, user_id, created_at) VALUES ($1, $2, $3)
