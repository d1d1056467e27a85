SELECT
    (SELECT COUNT(*) FROM (SELECT 1 FROM outbox WHERE lane = 'fast'
        AND published_at IS NULL AND failed_at IS NULL LIMIT $1) f) AS "fast!: i64",
    (SELECT COUNT(*) FROM (SELECT 1 FROM outbox WHERE lane = 'normal'
        AND published_at IS NULL AND failed_at IS NULL LIMIT $1) n) AS "normal!: i64",
    (SELECT COUNT(*) FROM (SELECT 1 FROM outbox WHERE failed_at IS NOT NULL
        AND published_at IS NULL LIMIT $1) x) AS "failed!: i64",
    (SELECT created_at FROM outbox WHERE lane = 'fast' AND published_at IS NULL AND failed_at IS NULL
        ORDER BY seq LIMIT 1) AS "fast_at: i64",
    (SELECT created_at FROM outbox WHERE lane = 'normal' AND published_at IS NULL AND failed_at IS NULL
        ORDER BY seq LIMIT 1) AS "normal_at: i64"
