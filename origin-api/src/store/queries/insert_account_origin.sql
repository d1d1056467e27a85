INSERT INTO account_origins (user_id, invited_to, invited_by, created_at)
VALUES ($1, $2, $3, $4)
