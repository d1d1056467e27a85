UPDATE links SET version = version + 1, updated_at = $1
WHERE status <> 'deleted' AND domain = $2 AND code = $3
RETURNING link_id, domain, code, target_url, owner_id, status, redirect_status, expires_at,
    version, key_version, code_kind, forward_query, title, tags, created_at, updated_at,
    published_version, published_at, code_number, options
