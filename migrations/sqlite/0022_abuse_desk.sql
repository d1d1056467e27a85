-- The abuse desk (issue 40, docs/abuse.md). A threat feed is a named list of hosts and
-- URLs, loaded from a file or a URL and refreshed on a schedule; its entries are
-- replaced whole by each refresh. A target on a feed is refused at creation, and a live
-- link on one is banned through the ordinary ban lane after each refresh.
CREATE TABLE feeds (
    name            TEXT    PRIMARY KEY,
    source          TEXT    NOT NULL,
    format          TEXT    NOT NULL CHECK (format IN ('urlhaus', 'phishtank', 'openphish', 'hosts', 'plain')),
    refresh_every_s INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    refreshed_at    INTEGER,
    -- When the next refresh is due.
    due_at          INTEGER NOT NULL,
    hosts           INTEGER NOT NULL,
    urls            INTEGER NOT NULL,
    last_error      TEXT
);

-- `kind` is `host` (matches the host and every host under it) or `url` (matches that
-- URL exactly, as Hop normalizes targets).
CREATE TABLE feed_entries (
    kind  TEXT NOT NULL CHECK (kind IN ('host', 'url')),
    value TEXT NOT NULL,
    feed  TEXT NOT NULL,
    PRIMARY KEY (kind, value, feed)
);
CREATE INDEX feed_entries_by_feed ON feed_entries (feed);

-- Reports from the public form: what a visitor said about a short link, for admins.
-- `link_id` is the link the short URL named when it was reported, if any.
CREATE TABLE reports (
    report_id   INTEGER PRIMARY KEY AUTOINCREMENT,
    domain      TEXT    NOT NULL,
    code        TEXT    NOT NULL,
    link_id     INTEGER,
    category    TEXT    NOT NULL CHECK (category IN ('phishing', 'malware', 'spam', 'other')),
    details     TEXT    NOT NULL,
    contact     TEXT,
    created_at  INTEGER NOT NULL,
    resolved_at INTEGER,
    resolution  TEXT
);
CREATE INDEX reports_open ON reports (created_at) WHERE resolved_at IS NULL;
CREATE INDEX reports_by_link ON reports (domain, code);

-- Where the background re-check of live links stands (a link id; -1: from the start).
CREATE TABLE recheck_position (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    link_id INTEGER NOT NULL,
    rounds  INTEGER NOT NULL
);
INSERT INTO recheck_position (id, link_id, rounds) VALUES (1, -1, 0);
