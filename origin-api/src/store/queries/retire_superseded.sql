-- The undelivered rows of lane $2 from seq $3 to $4 (the batch about to be pushed) of
-- which a newer version of the same key was delivered: marked delivered unpushed. Bounded
-- by the batch (outbox_pending), so a round costs the same with a million rows waiting.
UPDATE outbox SET published_at = $1
WHERE published_at IS NULL AND lane = $2 AND seq BETWEEN $3 AND $4
    AND failed_at IS NULL AND kind IN ('link', 'deny', 'cfg')
    AND EXISTS (SELECT 1 FROM outbox AS newer WHERE newer.kind = outbox.kind
    AND newer.route_key = outbox.route_key AND newer.version > outbox.version
    AND newer.published_at IS NOT NULL)
RETURNING seq
