SELECT COUNT(*) AS "codes: i64" FROM legacy_codes WHERE domain = $1
