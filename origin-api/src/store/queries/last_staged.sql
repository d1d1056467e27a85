SELECT MAX(staged_id) AS "staged_id: i64" FROM click_staged WHERE part = $1
