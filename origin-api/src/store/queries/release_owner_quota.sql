-- One link of owner $1 deleted: one fewer live.
UPDATE owner_usage SET live_links = live_links - 1 WHERE owner_id = $1
