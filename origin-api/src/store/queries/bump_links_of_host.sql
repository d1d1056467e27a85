UPDATE links SET version = version + 1, updated_at = $1
WHERE status <> 'deleted' AND (target_host = $2 OR target_host LIKE $3 ESCAPE '!' OR link_id IN
    (SELECT link_id FROM link_hosts WHERE host = $2 OR host LIKE $3 ESCAPE '!'))
RETURNING link_id, domain, code, target_url, owner_id, status, redirect_status, expires_at,
    version, key_version, code_kind, forward_query, title, tags, created_at, updated_at,
    published_version, published_at, code_number, options
