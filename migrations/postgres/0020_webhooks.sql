-- Webhooks (issue 39, docs/webhooks.md). An event is written in the transaction of the
-- change it tells of (while any endpoint is active), numbered by `seq`; the dispatcher
-- alone gives it its `ordinal` once committed, in one order every endpoint's cursor
-- follows (a sequence number is taken before commit, so it alone could let a cursor pass
-- an event that commits late).
CREATE TABLE webhook_events (
    seq        BIGSERIAL PRIMARY KEY,
    ordinal    BIGINT,
    type       TEXT    NOT NULL,
    -- The link's owner; NULL for a domain's event (its owners are in domain_owners).
    owner_id   TEXT,
    domain     TEXT    NOT NULL,
    code       TEXT,
    version    BIGINT NOT NULL,
    data       TEXT    NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX webhook_events_by_ordinal ON webhook_events (ordinal);
CREATE INDEX webhook_events_unsequenced ON webhook_events (seq) WHERE ordinal IS NULL;
CREATE INDEX webhook_events_by_age ON webhook_events (created_at);

-- Where events are sent: an admin's endpoint (owner_id NULL) gets every owner's, an
-- owner's only its own links' and its domains'. `delivered_through` is the ordinal delivered
-- through; the head event after it is retried on the schedule (`attempts`,
-- `failing_since`, `next_attempt_at`), so a receiver gets events in order.
CREATE TABLE webhook_endpoints (
    endpoint_id     TEXT    PRIMARY KEY,
    owner_id        TEXT,
    url             TEXT    NOT NULL,
    description     TEXT    NOT NULL,
    event_types     TEXT    NOT NULL,
    secret          TEXT    NOT NULL,
    previous_secret TEXT,
    previous_until  BIGINT,
    state           TEXT    NOT NULL CHECK (state IN ('active', 'disabled')),
    disabled_reason TEXT,
    delivered_through BIGINT NOT NULL,
    attempts        BIGINT NOT NULL,
    failing_since   BIGINT,
    next_attempt_at BIGINT NOT NULL,
    created_by      TEXT    NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX webhook_endpoints_by_owner ON webhook_endpoints (owner_id);

-- Every delivery attempt, kept as long as events are (`--webhook-retention`).
CREATE TABLE webhook_attempts (
    attempt_id   BIGSERIAL PRIMARY KEY,
    endpoint_id  TEXT    NOT NULL,
    event_seq    BIGINT NOT NULL,
    event_type   TEXT    NOT NULL,
    attempted_at BIGINT NOT NULL,
    result       TEXT    NOT NULL CHECK (result IN ('delivered', 'failed', 'gone')),
    status       BIGINT,
    error        TEXT,
    duration_ms  BIGINT NOT NULL
);
CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts (endpoint_id, attempt_id);
CREATE INDEX webhook_attempts_by_age ON webhook_attempts (attempted_at);

-- How far the events without a change of their own were written: `expired` (links whose
-- expiry passed up to this Unix ms), `clicks` (hours rolled up before this one).
CREATE TABLE webhook_marks (
    name TEXT    PRIMARY KEY,
    at   BIGINT NOT NULL
);

-- The expiry sweep reads every owner's links by expiry (links_by_expiry leads with the
-- owner); the hourly roll-up reads an hour's rows.
CREATE INDEX links_expiring ON links (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX click_hours_by_hour ON click_hours (hour);
