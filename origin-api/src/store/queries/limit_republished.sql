DELETE FROM limit_republish WHERE link_id = $1
