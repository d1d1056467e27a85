-- Click analytics (docs/analytics.md). No foreign key to links: deleting a link keeps its
-- history. No raw events: only their ids, for as long as a retry can bring one back.

-- The rollups are clustered by their keys (WITHOUT ROWID): a link's range is one
-- contiguous read, and each write updates one B-tree instead of two.

-- Ids of counted events, so a retried or replayed batch counts nothing twice. Swept after
-- the retention setting (HOP_CLICK_ID_RETENTION_H); events older than that are refused.
CREATE TABLE click_seen (
    event_id    TEXT    PRIMARY KEY,
    received_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX click_seen_by_age ON click_seen (received_at);

-- Visits per link, hour (Unix ms of its start, UTC) and bot flag. `owner_id` is copied
-- from the link (it never changes) so an owner's summary needs no join.
CREATE TABLE click_hours (
    link_id   INTEGER NOT NULL,
    hour      INTEGER NOT NULL,
    bot       INTEGER NOT NULL CHECK (bot IN (0, 1)),
    owner_id  TEXT    NOT NULL,
    visits    INTEGER NOT NULL,
    redirects INTEGER NOT NULL,
    PRIMARY KEY (link_id, hour, bot)
) WITHOUT ROWID;
CREATE INDEX click_hours_by_owner ON click_hours (owner_id, hour);

-- Visits per link, hour, bot flag and dimension value ('' when unknown).
CREATE TABLE click_dims (
    link_id INTEGER NOT NULL,
    dim     TEXT    NOT NULL CHECK (dim IN ('country', 'referrer', 'device', 'status')),
    hour    INTEGER NOT NULL,
    bot     INTEGER NOT NULL CHECK (bot IN (0, 1)),
    value   TEXT    NOT NULL,
    visits  INTEGER NOT NULL,
    PRIMARY KEY (link_id, dim, hour, bot, value)
) WITHOUT ROWID;

-- The same visits as click_hours by UTC day (Unix ms of its start), laid out for an
-- owner's summary: a month of an owner's links is a few rows per link, not hundreds.
CREATE TABLE click_days (
    owner_id  TEXT    NOT NULL,
    day       INTEGER NOT NULL,
    link_id   INTEGER NOT NULL,
    bot       INTEGER NOT NULL CHECK (bot IN (0, 1)),
    visits    INTEGER NOT NULL,
    redirects INTEGER NOT NULL,
    PRIMARY KEY (owner_id, day, link_id, bot)
) WITHOUT ROWID;
