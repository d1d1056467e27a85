-- A link's visit-limit count: its row of day 0, person 0.
SELECT CAST(SUM(n) AS BIGINT) AS "n: i64" FROM visit_limit_people
WHERE link_id = $1 AND day = 0 AND person = 0
