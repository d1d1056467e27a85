-- Counts $3 more live links for owner $1, $4 of them created on day $2, unless that
-- would pass its limits ($5 links, $6 a day; NULL: none). Nothing when it would.
UPDATE owner_usage
SET live_links = live_links + $3,
    created_on_day = (CASE WHEN day = $2 THEN created_on_day ELSE 0 END) + $4,
    day = $2
WHERE owner_id = $1
  AND (CAST($5 AS BIGINT) IS NULL OR live_links + $3 <= $5)
  AND (CAST($6 AS BIGINT) IS NULL OR (CASE WHEN day = $2 THEN created_on_day ELSE 0 END) + $4 <= $6)
