-- How far each process that writes clicks has written them, so the stats can say how
-- fresh they are (`data_as_of`). One row per process and source: `origin:{process}` (its
-- own redirects' tally) and `edge:{process}` (the edge's batches it ingested). Each row
-- is rewritten every few seconds by its own process only, so writers never contend.
CREATE TABLE click_sources (
    source TEXT PRIMARY KEY,
    -- Clicks made before this (Unix ms) are written; NULL when nothing is outstanding.
    complete_to BIGINT,
    reported_at BIGINT NOT NULL
);
