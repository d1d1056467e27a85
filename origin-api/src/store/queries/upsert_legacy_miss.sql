INSERT INTO legacy_misses (domain, code, visits, bot_visits, first_seen_at, last_seen_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (domain, code) DO UPDATE SET
    visits = legacy_misses.visits + excluded.visits,
    bot_visits = legacy_misses.bot_visits + excluded.bot_visits,
    first_seen_at = CASE WHEN excluded.first_seen_at < legacy_misses.first_seen_at
        THEN excluded.first_seen_at ELSE legacy_misses.first_seen_at END,
    last_seen_at = CASE WHEN excluded.last_seen_at > legacy_misses.last_seen_at
        THEN excluded.last_seen_at ELSE legacy_misses.last_seen_at END
