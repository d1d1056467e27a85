SELECT user_id, created_at FROM known_devices WHERE device_hash = $1
