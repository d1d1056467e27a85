UPDATE legacy_misses SET
    visits = visits + $3,
    bot_visits = bot_visits + $4,
    last_seen_at = CASE WHEN $5 > last_seen_at THEN $5 ELSE last_seen_at END
WHERE domain = $1 AND code = $2
