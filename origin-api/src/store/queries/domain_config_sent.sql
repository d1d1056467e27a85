SELECT MAX(version) AS "max_version: i64" FROM outbox WHERE kind = 'cfg' AND route_key = $1
