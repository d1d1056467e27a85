-- Up to $2 hourly click rollups of hours before $1 (`--click-rollup-retention`).
DELETE FROM click_hours WHERE (link_id, hour, bot) IN (
    SELECT link_id, hour, bot FROM click_hours WHERE hour < $1 LIMIT $2)
