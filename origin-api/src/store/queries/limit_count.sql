SELECT CAST(SUM(n) AS BIGINT) AS "n: i64" FROM visit_limit_people WHERE link_id = $1
