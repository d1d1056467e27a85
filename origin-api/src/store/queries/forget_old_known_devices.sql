DELETE FROM known_devices WHERE created_at < $1
