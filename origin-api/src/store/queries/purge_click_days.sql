-- Up to $2 daily click rollups of days before $1 (`--click-rollup-retention`).
DELETE FROM click_days WHERE (owner_id, day, link_id, bot) IN (
    SELECT owner_id, day, link_id, bot FROM click_days WHERE day < $1 LIMIT $2)
