-- Fenced publishing (docs/decisions.md, "Publishing"): each takeover of a lease starts a
-- new epoch, and the publisher's writes are conditional on still holding its epoch.
-- `clean` says whether the lease was free (given up, or never held) when this epoch
-- took it, rather than taken over after it lapsed: only then may the new holder push
-- at once.
ALTER TABLE leases ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE leases ADD COLUMN clean BOOLEAN NOT NULL DEFAULT FALSE;

-- No poison pill: a row the edge refuses is retried on its own schedule, and after
-- enough attempts set aside (failed_at) where an operator lists and retries it.
ALTER TABLE outbox ADD COLUMN failed_at BIGINT;
ALTER TABLE outbox ADD COLUMN next_attempt_at BIGINT NOT NULL DEFAULT 0;
CREATE INDEX outbox_failed ON outbox (seq) WHERE failed_at IS NOT NULL;
-- Delivered rows are pruned by age.
CREATE INDEX outbox_delivered ON outbox (published_at) WHERE published_at IS NOT NULL;

-- Browsers keep a redirect for a minute by default, not an hour: max_age_s is the
-- longest a ban, delete or edit takes to reach a visitor who already clicked.
ALTER TABLE domains ALTER COLUMN max_age_s SET DEFAULT 60;
