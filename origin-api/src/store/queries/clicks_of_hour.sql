SELECT l.link_id, l.owner_id, l.domain, l.code, l.version,
    CAST(SUM(CASE WHEN h.bot THEN 0 ELSE h.visits END) AS BIGINT) AS "visits!: i64",
    CAST(SUM(CASE WHEN h.bot THEN h.visits ELSE 0 END) AS BIGINT) AS "bot_visits!: i64"
FROM click_hours h JOIN links l ON l.link_id = h.link_id
WHERE h.hour = $1 AND h.link_id > $2
GROUP BY l.link_id, l.owner_id, l.domain, l.code, l.version
ORDER BY l.link_id
LIMIT $3
