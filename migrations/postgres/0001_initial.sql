-- Hop's data model (docs/data-model.md). Times are Unix milliseconds and every integer is
-- BIGINT, so that one row type decodes from SQLite and PostgreSQL alike.

CREATE TABLE domains (
    domain           TEXT     PRIMARY KEY,
    alphabet         TEXT     NOT NULL DEFAULT 'base62' CHECK (alphabet IN ('base62', 'base58', 'base36')),
    code_length      BIGINT NOT NULL DEFAULT 7 CHECK (code_length BETWEEN 1 AND 10),
    case_insensitive BOOLEAN  NOT NULL DEFAULT FALSE,
    forward_query    BOOLEAN  NOT NULL DEFAULT FALSE,
    default_redirect BIGINT NOT NULL DEFAULT 302 CHECK (default_redirect IN (301, 302, 307, 308)),
    max_age_s        BIGINT   NOT NULL DEFAULT 3600 CHECK (max_age_s >= 0),
    created_at       BIGINT   NOT NULL,
    updated_at       BIGINT   NOT NULL
);

CREATE TABLE links (
    link_id         BIGINT   PRIMARY KEY,
    domain          TEXT     NOT NULL,
    code            TEXT     NOT NULL,
    target_url      TEXT     NOT NULL,
    owner_id        TEXT     NOT NULL,
    status          TEXT     NOT NULL CHECK (status IN ('active', 'disabled', 'deleted')),
    redirect_status BIGINT NOT NULL DEFAULT 302 CHECK (redirect_status IN (301, 302, 307, 308)),
    expires_at      BIGINT,
    version         BIGINT   NOT NULL DEFAULT 1 CHECK (version >= 1),
    key_version     BIGINT,
    code_kind       TEXT     NOT NULL CHECK (code_kind IN ('generated', 'custom')),
    forward_query   BOOLEAN  NOT NULL DEFAULT FALSE,
    title           TEXT,
    tags            TEXT     NOT NULL DEFAULT '[]',
    created_at      BIGINT   NOT NULL,
    updated_at      BIGINT   NOT NULL,
    UNIQUE (domain, code)
);
CREATE INDEX links_by_owner ON links (owner_id, created_at DESC, link_id DESC);

CREATE TABLE id_segments (
    name       TEXT   PRIMARY KEY,
    max_id     BIGINT NOT NULL,
    step       BIGINT NOT NULL CHECK (step > 0),
    updated_at BIGINT NOT NULL
);

CREATE TABLE idempotency (
    owner_id     TEXT   NOT NULL,
    key          TEXT   NOT NULL,
    request_hash TEXT   NOT NULL,
    state        TEXT   NOT NULL CHECK (state IN ('received', 'allocated', 'stored', 'succeeded')),
    link_id      BIGINT,
    response     TEXT,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (owner_id, key)
);
CREATE INDEX idempotency_by_age ON idempotency (created_at);

CREATE TABLE outbox (
    seq          BIGSERIAL PRIMARY KEY,
    lane         TEXT      NOT NULL CHECK (lane IN ('fast', 'normal')),
    kind         TEXT      NOT NULL,
    route_key    TEXT      NOT NULL,
    version      BIGINT    NOT NULL,
    payload      TEXT      NOT NULL,
    created_at   BIGINT    NOT NULL,
    published_at BIGINT,
    attempts     BIGINT    NOT NULL DEFAULT 0,
    last_error   TEXT
);
CREATE INDEX outbox_pending ON outbox (lane, seq) WHERE published_at IS NULL;

CREATE TABLE bans (
    ban_id     BIGSERIAL PRIMARY KEY,
    kind       TEXT      NOT NULL CHECK (kind IN ('code', 'host')),
    domain     TEXT,
    code       TEXT,
    host       TEXT,
    reason     TEXT      NOT NULL,
    created_by TEXT      NOT NULL,
    created_at BIGINT    NOT NULL,
    lifted_at  BIGINT,
    CHECK ((kind = 'code' AND domain IS NOT NULL AND code IS NOT NULL AND host IS NULL)
        OR (kind = 'host' AND host IS NOT NULL AND domain IS NULL AND code IS NULL))
);
CREATE INDEX bans_active ON bans (kind) WHERE lifted_at IS NULL;

CREATE TABLE api_keys (
    key_id      TEXT   PRIMARY KEY,
    owner_id    TEXT   NOT NULL,
    name        TEXT   NOT NULL,
    secret_hash TEXT   NOT NULL UNIQUE,
    scopes      TEXT   NOT NULL,
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);
