DELETE FROM click_sources WHERE reported_at < $1
