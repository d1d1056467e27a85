SELECT hour - (hour % $4) AS bucket, bot,
    CAST(SUM(visits) AS BIGINT), CAST(SUM(redirects) AS BIGINT)
FROM click_hours
WHERE link_id = $1 AND hour >= $2 AND hour < $3
GROUP BY bucket, bot
ORDER BY bucket
