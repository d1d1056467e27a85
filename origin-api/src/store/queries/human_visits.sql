SELECT CAST(SUM(visits) AS BIGINT) AS "visits: i64" FROM click_hours WHERE link_id = $1 AND bot = $2
