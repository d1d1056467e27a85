SELECT domain, alphabet, code_length, case_insensitive, forward_query,
    default_redirect, max_age_s, status, not_found_url, root_url, expired_url, shared,
    allowed_target_hosts, version, created_at, updated_at, interstitial, brand_name, brand_colour,
    legacy_url, code_strategy, legacy_until
FROM domains
WHERE domain = $1
