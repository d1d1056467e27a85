-- A report from the public form.
INSERT INTO reports (domain, code, link_id, category, details, contact, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING report_id
