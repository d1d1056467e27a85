-- The re-check moved on.
UPDATE recheck_position SET link_id = $1, rounds = $2 WHERE id = 1
