-- $2 people's visits of link $1 that named no person: each one a person (docs/api.md).
INSERT INTO visit_limit_people (link_id, day, person, n) VALUES ($1, 0, 0, $2)
ON CONFLICT (link_id, day, person) DO UPDATE SET n = visit_limit_people.n + excluded.n
