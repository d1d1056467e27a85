UPDATE memberships SET role = $3
WHERE user_id = $1 AND owner_id = $2
    AND ($3 = 'admin' OR role <> 'admin'
        OR (SELECT COUNT(*) FROM memberships a WHERE a.owner_id = $2 AND a.role = 'admin') > 1)
