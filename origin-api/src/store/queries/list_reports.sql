-- A page of reports, newest first, before report $1; open ones only unless $2 is true.
-- With each: the link it names as it is now, and how many reports name that link.
SELECT r.report_id, r.domain, r.code, r.category, r.details, r.contact, r.created_at,
    r.resolved_at, r.resolution, l.owner_id, l.target_url, l.status,
    (SELECT COUNT(*) FROM reports n WHERE n.domain = r.domain AND n.code = r.code) AS reports_of_link
FROM reports r
LEFT JOIN links l ON l.domain = r.domain AND l.code = r.code
WHERE r.report_id < $1 AND (r.resolved_at IS NULL OR $2)
ORDER BY r.report_id DESC
LIMIT $3
