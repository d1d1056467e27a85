WITH RECURSIVE d(domain) AS (
    SELECT MIN(domain) FROM links
    UNION ALL
    SELECT (SELECT MIN(l.domain) FROM links l WHERE l.domain > d.domain)
    FROM d WHERE d.domain IS NOT NULL)
SELECT domain FROM d WHERE domain IS NOT NULL
UNION SELECT domain FROM domains
