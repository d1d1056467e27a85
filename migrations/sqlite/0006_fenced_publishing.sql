-- Fenced publishing (docs/decisions.md, "Publishing"): each takeover of a lease starts a
-- new epoch, and the publisher's writes are conditional on still holding its epoch.
-- `clean` says whether the lease was free (given up, or never held) when this epoch
-- took it, rather than taken over after it lapsed: only then may the new holder push
-- at once.
ALTER TABLE leases ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE leases ADD COLUMN clean INTEGER NOT NULL DEFAULT 0;

-- No poison pill: a row the edge refuses is retried on its own schedule, and after
-- enough attempts set aside (failed_at) where an operator lists and retries it.
ALTER TABLE outbox ADD COLUMN failed_at INTEGER;
ALTER TABLE outbox ADD COLUMN next_attempt_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX outbox_failed ON outbox (seq) WHERE failed_at IS NOT NULL;
-- Delivered rows are pruned by age.
CREATE INDEX outbox_delivered ON outbox (published_at) WHERE published_at IS NOT NULL;

-- Browsers keep a redirect for a minute by default, not an hour: max_age_s is the
-- longest a ban, delete or edit takes to reach a visitor who already clicked. SQLite
-- cannot change a column's default, so the table is rebuilt.
CREATE TABLE domains_new (
    domain           TEXT    PRIMARY KEY,
    alphabet         TEXT    NOT NULL DEFAULT 'base62' CHECK (alphabet IN ('base62', 'base58', 'base36')),
    code_length      INTEGER NOT NULL DEFAULT 7 CHECK (code_length BETWEEN 1 AND 10),
    case_insensitive INTEGER NOT NULL DEFAULT 0 CHECK (case_insensitive IN (0, 1)),
    forward_query    INTEGER NOT NULL DEFAULT 0 CHECK (forward_query IN (0, 1)),
    default_redirect INTEGER NOT NULL DEFAULT 302 CHECK (default_redirect IN (301, 302, 307, 308)),
    max_age_s        INTEGER NOT NULL DEFAULT 60 CHECK (max_age_s >= 0),
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
INSERT INTO domains_new SELECT domain, alphabet, code_length, case_insensitive, forward_query,
    default_redirect, max_age_s, created_at, updated_at FROM domains;
DROP TABLE domains;
ALTER TABLE domains_new RENAME TO domains;
