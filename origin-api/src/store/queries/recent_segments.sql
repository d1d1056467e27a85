SELECT payload FROM outbox WHERE kind = 'segment' AND route_key = $1 AND created_at >= $2
