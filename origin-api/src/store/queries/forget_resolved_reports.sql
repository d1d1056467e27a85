-- Resolved reports past their retention (docs/abuse.md): a reporter's details and
-- contact are kept no longer than the desk needs them.
DELETE FROM reports WHERE resolved_at IS NOT NULL AND resolved_at < $1
