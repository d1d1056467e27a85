-- Quotas per owner (issue 40, docs/quotas.md). An owner's own limits, where the
-- operator set any (NULL: the --owner-* default; a limit of -1: none for this owner),
-- and what it uses, kept in the transaction of every create, delete and restore.
CREATE TABLE owner_quotas (
    owner_id          TEXT    PRIMARY KEY,
    max_links         BIGINT,
    max_links_per_day BIGINT
);

-- `live_links`: links not deleted; `created_on_day`: links created on UTC day `day`
-- (days since the epoch), deleted ones too.
CREATE TABLE owner_usage (
    owner_id       TEXT    PRIMARY KEY,
    live_links     BIGINT  NOT NULL,
    day            BIGINT  NOT NULL,
    created_on_day BIGINT  NOT NULL
);
INSERT INTO owner_usage (owner_id, live_links, day, created_on_day)
SELECT owner_id, SUM(CASE WHEN status <> 'deleted' THEN 1 ELSE 0 END), 0, 0
FROM links GROUP BY owner_id;
