-- Retention (issue 40, docs/retention.md): what the purge walks. Expired links are found
-- by `links_expiring` (0020); a purged link leaves it (its expiry is cleared).

-- Tombstones whose payload the purge has yet to remove, oldest deletion first: a
-- tombstone's `updated_at` is its deletion, and a purged one has an empty target.
CREATE INDEX links_tombstones ON links (updated_at) WHERE status = 'deleted' AND target_url <> '';

-- Daily click rollups by age, for `--click-rollup-retention` (hourly ones have
-- `click_hours_by_hour`, 0020). A daily row is made once per owner, day and link, so the
-- index costs the click path one entry per new row.
CREATE INDEX click_days_by_day ON click_days (day);
