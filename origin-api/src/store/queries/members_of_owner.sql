SELECT u.email, m.role FROM memberships m JOIN users u ON u.user_id = m.user_id
WHERE m.owner_id = $1 ORDER BY u.email
