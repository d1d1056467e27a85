DELETE FROM domains WHERE domain = $1
