-- Every sequence and the end of the last segment reserved from it (its high-water mark).
SELECT name, max_id FROM id_segments
