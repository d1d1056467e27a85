-- Where the re-check of live links stands: the last link id checked (-1: none yet) and
-- how many passes over every link it has finished.
SELECT link_id, rounds FROM recheck_position WHERE id = 1
