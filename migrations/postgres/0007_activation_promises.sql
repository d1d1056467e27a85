-- The activation window as a promise (docs/decisions.md, "Activation"): every meta the
-- publisher hands the edge says "until at_ms + window_ms, no id at or past high +
-- headroom will be issued". Segment reservation checks the promises still running, so
-- a promise is never broken; the oldest undelivered generated link keeps low down.
CREATE TABLE activation_promises (
    v         BIGINT PRIMARY KEY,
    at_ms     BIGINT NOT NULL,
    window_ms BIGINT NOT NULL,
    low       BIGINT NOT NULL,
    high      BIGINT NOT NULL,
    headroom  BIGINT NOT NULL
);
CREATE INDEX activation_promises_by_time ON activation_promises (at_ms);
CREATE INDEX links_undelivered ON links (link_id)
    WHERE published_version IS NULL AND code_kind = 'generated';
