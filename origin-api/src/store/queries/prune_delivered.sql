DELETE FROM outbox WHERE published_at IS NOT NULL AND published_at < $1
    AND EXISTS (SELECT 1 FROM outbox AS newer WHERE newer.kind = outbox.kind
    AND newer.route_key = outbox.route_key AND newer.version > outbox.version
    AND newer.published_at IS NOT NULL)
