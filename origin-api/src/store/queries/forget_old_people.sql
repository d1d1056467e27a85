-- Up to $2 people of days before $1: no click of those days can arrive any more, and their
-- links' counts already hold them.
DELETE FROM visit_limit_people WHERE (link_id, day, person) IN (
    SELECT link_id, day, person FROM visit_limit_people WHERE day > 0 AND day < $1 LIMIT $2)
