DELETE FROM domain_owners WHERE domain = $1
