-- The domain registry (issue 15, docs/decisions.md#domains): who may create links on a
-- domain, whether it serves, where visitors go when there is no link for them, and the
-- hosts its links may point at. The table existed with the code-shape settings, but
-- nothing wrote it; each new column's default is the behaviour every domain had.
ALTER TABLE domains ADD COLUMN shared BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE domains ADD COLUMN status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled'));
ALTER TABLE domains ADD COLUMN not_found_url TEXT;
ALTER TABLE domains ADD COLUMN root_url TEXT;
ALTER TABLE domains ADD COLUMN expired_url TEXT;
-- A JSON array of host names (each allows its subdomains too); NULL allows any host.
ALTER TABLE domains ADD COLUMN allowed_target_hosts TEXT;
ALTER TABLE domains ADD COLUMN version BIGINT NOT NULL DEFAULT 1;

-- The owners of a domain that is not shared, and an owner's domains by owner.
CREATE TABLE domain_owners (
    domain   TEXT NOT NULL REFERENCES domains (domain) ON DELETE CASCADE,
    owner_id TEXT NOT NULL,
    PRIMARY KEY (domain, owner_id)
);
CREATE INDEX domain_owners_by_owner ON domain_owners (owner_id);
