-- What a link may carry beyond its own target (issue 17): targeting rules, an A/B split,
-- a social preview, its own page for when it has ended, an interstitial, and whether its
-- visits are recorded. One JSON document, NULL for a link that uses none of it (nearly
-- all): read and written whole with the link, never searched by its parts.
ALTER TABLE links ADD COLUMN options TEXT;

-- The hosts of a link's other targets (its rules' and its split's, not its own, which is
-- links.target_host), so that a host ban finds every link that could send a visitor to
-- the host. Rewritten with the link; a plain link has no rows here.
CREATE TABLE link_hosts (
    host    TEXT   NOT NULL,
    link_id BIGINT NOT NULL REFERENCES links (link_id),
    PRIMARY KEY (host, link_id)
);
CREATE INDEX link_hosts_by_link ON link_hosts (link_id);
