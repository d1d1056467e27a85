-- Every entry of one feed (a refresh writes them again; a removal leaves none).
DELETE FROM feed_entries WHERE feed = $1
