-- A link's history (issue 40, docs/history.md): one row per change, written in the
-- transaction of the change. `state` is the link's fields as they became (JSON, no
-- secret: a fingerprint says when one changed); what changed is worked out on reading,
-- against the row before. A link's rows are read in (version, entry_id) order: an
-- expiry is recorded at the version that expired, after any row of that version.
CREATE TABLE link_history (
    entry_id BIGSERIAL PRIMARY KEY,
    link_id  BIGINT  NOT NULL,
    version  BIGINT  NOT NULL,
    action   TEXT    NOT NULL CHECK (action IN ('created', 'imported', 'edited', 'deleted',
        'restored', 'reverted', 'banned', 'unbanned', 'expired', 'exhausted')),
    -- `key:ID`, `user:ID` or `system`.
    actor    TEXT    NOT NULL,
    at       BIGINT  NOT NULL,
    state    TEXT    NOT NULL,
    note     TEXT
);
CREATE INDEX link_history_by_link ON link_history (link_id, version, entry_id);
