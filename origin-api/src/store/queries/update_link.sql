UPDATE links SET target_url = $1, status = $2, redirect_status = $3, expires_at = $4,
    forward_query = $5, title = $6, tags = $7, version = version + 1, updated_at = $8,
    target_host = $12, options = $13
WHERE domain = $9 AND code = $10 AND version = $11
RETURNING link_id, domain, code, target_url, owner_id, status, redirect_status, expires_at,
    version, key_version, code_kind, forward_query, title, tags, created_at, updated_at,
    published_version, published_at, code_number, options
