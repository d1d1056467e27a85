-- The limits the operator set for owner $1, if any.
SELECT max_links, max_links_per_day FROM owner_quotas WHERE owner_id = $1
