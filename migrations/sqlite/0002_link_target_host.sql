-- The target's host, normalized, so a host ban can find every link it covers (the host
-- itself or a subdomain) without parsing URLs in SQL. Rows from before this migration
-- keep '' and are found again when they are next written.
ALTER TABLE links ADD COLUMN target_host TEXT NOT NULL DEFAULT '';
CREATE INDEX links_by_target_host ON links (target_host);
