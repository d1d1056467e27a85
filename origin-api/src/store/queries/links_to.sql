SELECT link_id, domain, code, target_url, owner_id, status, redirect_status, expires_at,
    version, key_version, code_kind, forward_query, title, tags, created_at, updated_at,
    published_version, published_at, code_number, options
FROM links
WHERE target_host = $1 AND target_url = $2
    AND owner_id = $3 AND domain = $4 AND status = 'active'
ORDER BY created_at, link_id LIMIT 20
