SELECT COUNT(*) AS "open: i64" FROM reports
WHERE domain = $1 AND code = $2 AND resolved_at IS NULL
