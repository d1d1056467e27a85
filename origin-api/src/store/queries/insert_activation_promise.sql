INSERT INTO activation_promises (sequence, v, at_ms, window_ms, low, high, headroom)
VALUES ($1, $2, $3, $4, $5, $6, $7)
