SELECT opened_at, until_at FROM foreign_codes WHERE domain = $1
