SELECT MIN(code_number) AS "min_code_number: i64" FROM links
WHERE domain = $1 AND published_version IS NULL AND code_kind = 'generated'
