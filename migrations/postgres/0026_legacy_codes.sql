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

-- How an account was made, when an invitation made it (issue 54, docs/dashboard.md):
-- whoever opened that link chose its password, so an operator's `users grant` of
-- another owner's rights to it must be a decision, not a slip.
CREATE TABLE account_origins (
    user_id        TEXT    PRIMARY KEY,
    invited_to     TEXT    NOT NULL,
    invited_by     TEXT    NOT NULL,
    created_at     BIGINT  NOT NULL
);

-- Who made a key in the dashboard, for its owner: the key ends when its maker loses
-- access to that owner (removed, or disabled). Keys an operator made have no row.
CREATE TABLE key_makers (
    key_id     TEXT    PRIMARY KEY,
    user_id    TEXT    NOT NULL,
    owner_id   TEXT    NOT NULL,
    created_at BIGINT  NOT NULL
);
CREATE INDEX key_makers_by_user ON key_makers (user_id, owner_id);

-- Browsers an account signed in from (issue 54, docs/dashboard.md): the right password
-- from one of them gets in while strangers' guesses hold the account's wait. Only a hash
-- of the browser's cookie is kept.
CREATE TABLE known_devices (
    device_hash  TEXT    PRIMARY KEY,
    user_id      TEXT    NOT NULL,
    created_at   BIGINT  NOT NULL
);
CREATE INDEX known_devices_by_age ON known_devices (created_at);
