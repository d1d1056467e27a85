SELECT seq, ordinal, type, domain, code, version, data, created_at
FROM webhook_events
WHERE ordinal > $1 AND ordinal <= $2
    AND ($3 = '' OR owner_id = $3
        OR (owner_id IS NULL AND domain IN (SELECT domain FROM domain_owners WHERE owner_id = $3)))
    AND $4 LIKE '%,' || type || ',%'
ORDER BY ordinal
LIMIT $5
