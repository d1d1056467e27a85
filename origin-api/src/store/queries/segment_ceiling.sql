SELECT max_id FROM id_segments WHERE name = $1
