-- The legacy fallback is no open redirect (issue 54, docs/migrating.md, D-275): only a
-- code known to have lived at the old shortener is sent on there, and only until the
-- fallback's end date. A domain whose legacy_url was set before has no end date, so no
-- fallback, until an operator loads its codes and sets one.
ALTER TABLE domains ADD COLUMN legacy_until BIGINT; -- Unix seconds

-- The codes that lived at a domain's old shortener: from the imports that moved it and
-- the lists operators load. Each reaches the edge as lg:{domain}/{code}.
CREATE TABLE legacy_codes (
    domain   TEXT    NOT NULL,
    code     TEXT    NOT NULL,
    source   TEXT    NOT NULL,
    added_at BIGINT  NOT NULL,
    PRIMARY KEY (domain, code)
);

-- Resolved reports are kept for a while, then forgotten (issue 54, docs/abuse.md).
CREATE INDEX reports_resolved ON reports (resolved_at) WHERE resolved_at IS NOT NULL;
