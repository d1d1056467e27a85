SELECT hour - (hour % $4) AS "bucket!: i64", bot,
    CAST(SUM(visits) AS BIGINT) AS "visits!: i64",
    CAST(SUM(redirects) AS BIGINT) AS "redirects!: i64"
FROM click_hours
WHERE link_id = $1 AND hour >= $2 AND hour < $3
GROUP BY 1, bot
ORDER BY 1
