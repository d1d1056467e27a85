SELECT COUNT(*) AS "codes: i64" FROM legacy_misses WHERE domain = $1
