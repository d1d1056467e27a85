SELECT code FROM legacy_codes WHERE domain = $1 AND code = $2
