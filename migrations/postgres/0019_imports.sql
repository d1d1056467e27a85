-- Codes imported from other shorteners (issue 39, docs/migrating.md). A domain that holds
-- any keeps a row here for ever: its imported codes may have the shape of its generated
-- ones, with numbers that say nothing of when they were made, so the origin's redirect no
-- longer answers such a code 404 by its number alone. While an import runs, the window
-- [opened_at, until_at] (ms) tells the edge, through the activation meta, not to answer
-- 404 unasked for a code KV does not hold yet.
CREATE TABLE foreign_codes (
    domain    TEXT    PRIMARY KEY,
    opened_at BIGINT NOT NULL,
    until_at  BIGINT NOT NULL
);
