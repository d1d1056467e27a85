DELETE FROM link_hosts WHERE link_id = $1
