-- An admin closes a report; closing a closed one changes nothing.
UPDATE reports SET resolved_at = $2, resolution = $3
WHERE report_id = $1 AND resolved_at IS NULL
