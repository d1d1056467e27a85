SELECT source, complete_to FROM click_sources WHERE reported_at >= $1
