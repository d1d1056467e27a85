SELECT owner_id, role FROM memberships WHERE user_id = $1 ORDER BY owner_id
