SELECT invited_to, invited_by FROM account_origins WHERE user_id = $1
