-- Finding an owner's links among many (issue 38, docs/decisions/dashboard.md D-245): the
-- overview's links expiring soon and links at their visit limit, without reading every
-- link of the owner. (Text search reads them: SQLite has no trigram index.)

CREATE INDEX links_by_expiry ON links (owner_id, expires_at) WHERE expires_at IS NOT NULL;

-- The predicate is the store's own, word for word (LinkOptions::column_pattern).
CREATE INDEX links_exhausted ON links (owner_id, created_at DESC, link_id DESC)
    WHERE options LIKE '%"exhausted":true%';
