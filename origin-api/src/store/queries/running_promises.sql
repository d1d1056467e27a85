SELECT MIN(CASE WHEN at_ms + window_ms > $1 THEN low END) AS "earlier_low: i64",
    MAX(v) AS "last_v: i64"
FROM activation_promises WHERE sequence = $2
