INSERT INTO domain_owners (domain, owner_id) VALUES ($1, $2)
