UPDATE domains SET alphabet = $2, code_length = $3, case_insensitive = $4,
    forward_query = $5, default_redirect = $6, max_age_s = $7, status = $8,
    not_found_url = $9, root_url = $10, expired_url = $11, shared = $12,
    allowed_target_hosts = $13, version = $14, created_at = $15, updated_at = $16,
    interstitial = $17, brand_name = $18, brand_colour = $19,
    legacy_url = $20, code_strategy = $22, legacy_until = $23
WHERE domain = $1 AND version = $21
