-- The publisher retires undelivered rows that an already delivered newer version of the
-- same key supersedes (a transaction that committed late), so no sink is ever handed
-- an older value after a newer one.
CREATE INDEX outbox_by_key ON outbox (kind, route_key, version);
