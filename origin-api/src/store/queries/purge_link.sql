-- A link purged (docs/retention.md), if it is still at version $2: only its code, owner
-- and numbers stay, as a bare tombstone whose target is empty. Returned as written.
UPDATE links SET target_url = '', target_host = '', title = NULL, tags = '[]', options = NULL,
    expires_at = NULL, status = 'deleted', version = version + 1, updated_at = $3
WHERE link_id = $1 AND version = $2
RETURNING link_id, domain, code, target_url, owner_id, status, redirect_status, expires_at,
    version, key_version, code_kind, forward_query, title, tags, created_at, updated_at,
    published_version, published_at, code_number, options
