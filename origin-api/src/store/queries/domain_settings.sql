SELECT alphabet, code_length, case_insensitive, forward_query, default_redirect, max_age_s
FROM domains
WHERE domain = $1
