-- The publisher: one leader at a time holds the lease row named 'publisher' until
-- `expires_at` (Unix ms), renewing it while it works; a standby takes it once it lapses.
CREATE TABLE leases (
    name       TEXT    PRIMARY KEY,
    holder     TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
);
-- What the edge has of each link: the newest version the publisher delivered, and when.
ALTER TABLE links ADD COLUMN published_version INTEGER;
ALTER TABLE links ADD COLUMN published_at INTEGER;
-- Activation meta is computed from the segments reserved in the last minutes.
CREATE INDEX outbox_by_kind_time ON outbox (kind, created_at);
