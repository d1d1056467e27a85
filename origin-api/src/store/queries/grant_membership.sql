INSERT INTO memberships (user_id, owner_id, role, created_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (user_id, owner_id) DO UPDATE SET role = excluded.role
