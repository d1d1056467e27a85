-- A purged link's history: it holds the targets the purge removes.
DELETE FROM link_history WHERE link_id = $1
