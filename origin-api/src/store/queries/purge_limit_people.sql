DELETE FROM visit_limit_people WHERE link_id = $1
