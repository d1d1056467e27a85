-- Each domain numbers its generated codes in a sequence of its own (issue 15,
-- docs/decisions.md#per-domain-sequences): `id_segments` row `code:{domain}`. The
-- `links` row goes on numbering `link_id`, the internal key of every link.
--
-- A generated code encodes its number, kept as `code_number`: until now that number
-- was the link's id, so every existing code keeps its meaning.
ALTER TABLE links ADD COLUMN code_number BIGINT;
UPDATE links SET code_number = link_id WHERE code_kind = 'generated';

-- The oldest undelivered generated link of a domain keeps that domain's activation
-- window open (store::activation).
DROP INDEX links_undelivered;
CREATE INDEX links_undelivered ON links (domain, code_number)
    WHERE published_version IS NULL AND code_kind = 'generated';

-- A domain that holds generated codes goes on past every number the shared sequence
-- issued, so no new code can meet an old one; any other domain starts at 0. The step
-- is corrected to the domain's code space by its first reservation.
INSERT INTO id_segments (name, max_id, step, updated_at)
SELECT 'code:' || g.domain, s.max_id, 10000, s.updated_at
FROM (SELECT DISTINCT domain FROM links WHERE code_kind = 'generated') g
CROSS JOIN (SELECT max_id, updated_at FROM id_segments WHERE name = 'links') s
WHERE TRUE ON CONFLICT (name) DO NOTHING;
INSERT INTO id_segments (name, max_id, step, updated_at)
SELECT 'code:' || d.domain, 0, 10000, d.updated_at FROM domains d
WHERE NOT EXISTS (SELECT 1 FROM id_segments WHERE name = 'code:' || d.domain);

-- Promises are now made per code sequence. Those made for the shared sequence bind
-- nothing any more (no code is numbered by it), and the edge reads each domain's meta
-- under its own key, so they go, with the segment rows they were computed from.
DROP TABLE activation_promises;
CREATE TABLE activation_promises (
    sequence  TEXT    NOT NULL,
    v         BIGINT NOT NULL,
    at_ms     BIGINT NOT NULL,
    window_ms BIGINT NOT NULL,
    low       BIGINT NOT NULL,
    high      BIGINT NOT NULL,
    headroom  BIGINT NOT NULL,
    PRIMARY KEY (sequence, v)
);
CREATE INDEX activation_promises_by_time ON activation_promises (at_ms);
DELETE FROM outbox WHERE kind = 'segment';
