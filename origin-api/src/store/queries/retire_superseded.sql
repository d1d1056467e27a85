UPDATE outbox SET published_at = $1
WHERE published_at IS NULL AND failed_at IS NULL AND kind IN ('link', 'deny', 'cfg')
    AND EXISTS (SELECT 1 FROM outbox AS newer WHERE newer.kind = outbox.kind
    AND newer.route_key = outbox.route_key AND newer.version > outbox.version
    AND newer.published_at IS NOT NULL)
