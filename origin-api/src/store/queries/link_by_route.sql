SELECT link_id, domain, code, target_url, owner_id, status, redirect_status, expires_at,
    version, key_version, code_kind, forward_query, title, tags, created_at, updated_at,
    published_version, published_at, code_number, options
FROM links
WHERE domain = $1 AND code = $2
