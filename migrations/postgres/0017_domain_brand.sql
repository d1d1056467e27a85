-- A brand domain's look on its visitors' pages (issue 38, docs/edge.md): its name above
-- each page and its colour (#rrggbb, readable on white) for links and buttons. Both or
-- neither: NULL is Hop's own look.
ALTER TABLE domains ADD COLUMN brand_name TEXT;
ALTER TABLE domains ADD COLUMN brand_colour TEXT;
