INSERT INTO links (link_id, domain, code, target_url, owner_id, status, redirect_status,
    expires_at, version, key_version, code_kind, forward_query, title, tags, created_at, updated_at,
    target_host, code_number, options)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
