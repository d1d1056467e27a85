-- The people of days before $1, counted into their links' carried counts (day 0, person 0):
-- no tally of those days can arrive any more, so who they were is no longer needed.
INSERT INTO visit_limit_people (link_id, day, person, n)
SELECT link_id, 0, 0, SUM(n) FROM visit_limit_people WHERE day > 0 AND day < $1
GROUP BY link_id
ON CONFLICT (link_id, day, person) DO UPDATE SET n = visit_limit_people.n + excluded.n
