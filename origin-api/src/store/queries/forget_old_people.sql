DELETE FROM visit_limit_people WHERE day > 0 AND day < $1
