-- The edge's clicks, acknowledged but not yet in the rollups (docs/analytics.md, "Staged,
-- then folded"). A delivery of tallies is claimed (click_seen) and staged in one
-- transaction; the fold adds staged rows to click_hours and click_days and deletes
-- them in another, so each is counted exactly once. A delivery is staged as one row per
-- part (`part`: its links' ids modulo the parts), and each part folded on its own, so
-- that folds run side by side without touching the same rollup rows. `body` is the
-- part's counts by link-hour, as JSON; `made_at` when its oldest tally was sealed
-- (Unix ms), for the stats' `data_as_of`.
CREATE TABLE click_staged (
    staged_id BIGSERIAL PRIMARY KEY,
    part      SMALLINT NOT NULL,
    made_at   BIGINT NOT NULL,
    staged_at BIGINT NOT NULL,
    body      TEXT   NOT NULL
);
CREATE INDEX click_staged_by_part ON click_staged (part, staged_id);

-- The fold rewrites each link-hour of the current hour every few seconds: room left in
-- each page lets PostgreSQL update a row in place of its page (a HOT update, no index
-- entry) instead of bloating the indexes with a new entry per write.
ALTER TABLE click_hours SET (fillfactor = 70);
ALTER TABLE click_days SET (fillfactor = 70);
