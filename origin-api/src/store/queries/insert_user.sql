INSERT INTO users (user_id, email, password_hash, operator, created_at)
VALUES ($1, $2, $3, $4, $5)
