-- One feed (its entries first, by delete_feed_entries).
DELETE FROM feeds WHERE name = $1
