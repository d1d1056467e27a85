SELECT s.name FROM id_segments s JOIN domains d ON s.name = 'code:' || d.domain
WHERE d.status = 'active' ORDER BY s.name
