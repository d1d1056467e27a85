DELETE FROM known_devices WHERE device_hash = $1
