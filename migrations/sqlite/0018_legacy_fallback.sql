-- A domain moving from another shortener (issue 39, docs/migrating.md): while
-- legacy_url is set, a code with no link on the domain is sent to the same code there.
ALTER TABLE domains ADD COLUMN legacy_url TEXT;

-- The codes visitors still ask the old shortener for, through that fallback: what is
-- left to import. At most a bounded number of codes per domain (see clicks/legacy.rs).
CREATE TABLE legacy_misses (
    domain        TEXT    NOT NULL,
    code          TEXT    NOT NULL,
    visits        INTEGER NOT NULL,
    bot_visits    INTEGER NOT NULL,
    first_seen_at INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL,
    PRIMARY KEY (domain, code)
);
CREATE INDEX legacy_misses_by_visits ON legacy_misses (domain, visits DESC, code);
