-- Generated codes stored per domain, tombstones included: the code numbers in use.
SELECT domain, COUNT(*) AS codes FROM links WHERE code_number IS NOT NULL GROUP BY domain
