-- Click analytics (docs/analytics.md). No foreign key to links: deleting a link keeps its
-- history. No raw events: only their ids, for as long as a retry can bring one back.

-- Ids of counted events, so a retried or replayed batch counts nothing twice. Swept after
-- the retention setting (HOP_CLICK_ID_RETENTION_H); events older than that are refused.
CREATE TABLE click_seen (
    event_id    TEXT    PRIMARY KEY,
    received_at BIGINT NOT NULL
);
CREATE INDEX click_seen_by_age ON click_seen (received_at);

-- Visits per link, hour (Unix ms of its start, UTC) and bot flag. `owner_id` is copied
-- from the link (it never changes) so an owner's summary needs no join.
CREATE TABLE click_hours (
    link_id   BIGINT NOT NULL,
    hour      BIGINT NOT NULL,
    bot       BOOLEAN NOT NULL,
    owner_id  TEXT    NOT NULL,
    visits    BIGINT NOT NULL,
    redirects BIGINT NOT NULL,
    PRIMARY KEY (link_id, hour, bot)
);
CREATE INDEX click_hours_by_owner ON click_hours (owner_id, hour);

-- Visits per link, hour, bot flag and dimension value ('' when unknown).
CREATE TABLE click_dims (
    link_id BIGINT NOT NULL,
    dim     TEXT    NOT NULL CHECK (dim IN ('country', 'referrer', 'device', 'status')),
    hour    BIGINT NOT NULL,
    bot     BOOLEAN NOT NULL,
    value   TEXT    NOT NULL,
    visits  BIGINT NOT NULL,
    PRIMARY KEY (link_id, dim, hour, bot, value)
);

-- The same visits as click_hours by UTC day (Unix ms of its start), laid out for an
-- owner's summary: a month of an owner's links is a few rows per link, not hundreds.
CREATE TABLE click_days (
    owner_id  TEXT    NOT NULL,
    day       BIGINT NOT NULL,
    link_id   BIGINT NOT NULL,
    bot       BOOLEAN NOT NULL,
    visits    BIGINT NOT NULL,
    redirects BIGINT NOT NULL,
    PRIMARY KEY (owner_id, day, link_id, bot)
);
