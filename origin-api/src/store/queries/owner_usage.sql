-- What owner $1 uses: live links, and the links created on its counted day.
SELECT live_links, day, created_on_day FROM owner_usage WHERE owner_id = $1
