SELECT MIN(made_at) AS "made_at: i64" FROM click_staged
