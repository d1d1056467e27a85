UPDATE links SET published_version = $1, published_at = $2
WHERE domain = $3 AND code = $4
    AND (published_version IS NULL OR published_version < $1)
