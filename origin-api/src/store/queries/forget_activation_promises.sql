DELETE FROM activation_promises WHERE at_ms + window_ms + $1 < $2
