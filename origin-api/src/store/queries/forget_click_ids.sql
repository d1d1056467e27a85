DELETE FROM click_seen WHERE received_at < $1
