-- Finding an owner's links among millions (issue 38, docs/decisions/dashboard.md D-243,
-- D-245): what the dashboard's lists and overview ask that the walk down links_by_owner
-- cannot answer without reading every link of the owner.

-- Links expiring soon (the overview's "expiring within 7 days", condition=expiring).
CREATE INDEX links_by_expiry ON links (owner_id, expires_at) WHERE expires_at IS NOT NULL;

-- Links at their visit limit: few, and found without reading the rest. The predicate is
-- the store's own, word for word (LinkOptions::column_pattern).
CREATE INDEX links_exhausted ON links (owner_id, created_at DESC, link_id DESC)
    WHERE options LIKE '%"exhausted":true%';

-- Text search: trigrams of the searched text (code, target, title, tags), when the
-- server has pg_trgm (a contrib extension nearly every PostgreSQL ships, trusted since
-- PostgreSQL 13). Without it the search still works, reading the owner's links.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm is not available: a text search of links reads every link of its owner';
END $$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        CREATE INDEX links_search ON links USING gin
            ((LOWER(code || ' ' || target_url || ' ' || COALESCE(title, '') || ' ' || tags)) gin_trgm_ops);
    END IF;
END $$;
