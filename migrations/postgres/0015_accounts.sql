-- Accounts for the dashboard (issue 38, docs/dashboard.md): people sign in with an
-- email and a password, each a member of one or more owners with a role; a browser
-- holds a session, never an API key.

-- A person. `email` is stored lowercased, unique. `password_hash` is an argon2id PHC
-- string. `operator`: an instance administrator (every owner, bans, domains).
-- `session_epoch` moves on whenever every session of the user must end (a new
-- password, signing out everywhere, disabling): a session begun under an older epoch
-- opens nothing, even one whose sign-in was verifying while the epoch moved.
CREATE TABLE users (
    user_id       TEXT    PRIMARY KEY,
    email         TEXT    NOT NULL,
    password_hash TEXT    NOT NULL,
    operator      BOOLEAN NOT NULL DEFAULT FALSE,
    created_at    BIGINT NOT NULL,
    disabled_at   BIGINT,
    session_epoch BIGINT NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX users_by_email ON users (email);

-- Who may act for an owner, and how: admin (everything of the owner: members, keys),
-- editor (links), viewer (reading and statistics).
CREATE TABLE memberships (
    user_id    TEXT   NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
    owner_id   TEXT   NOT NULL,
    role       TEXT   NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, owner_id)
);
CREATE INDEX memberships_by_owner ON memberships (owner_id);

-- A signed-in browser. The cookie carries a secret; only its SHA-256 is stored, so
-- a copy of the database opens no session. `csrf_token` is the session's form token.
CREATE TABLE sessions (
    session_hash TEXT   PRIMARY KEY,
    user_id      TEXT   NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
    csrf_token   TEXT   NOT NULL,
    epoch        BIGINT NOT NULL,
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);
CREATE INDEX sessions_by_user ON sessions (user_id);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);

-- Sign-in attempts per email, known to Hop or not (so that the answers do not tell
-- which emails have accounts): each attempt is booked here before its password is
-- verified, by a write that succeeds only on the count it read, so that attempts sent at
-- once cannot share one look at the count. Forgotten after a success, and an hour after
-- the last attempt.
CREATE TABLE login_attempts (
    email        TEXT   PRIMARY KEY,
    failures     BIGINT NOT NULL,
    locked_until BIGINT,
    last_at      BIGINT NOT NULL
);
CREATE INDEX login_attempts_by_last ON login_attempts (last_at);

-- An invitation to join an owner with a role: a one-time link that expires. Only the
-- SHA-256 of its token is stored; `used_at` is set by the one acceptance that counts.
CREATE TABLE invitations (
    token_hash TEXT   PRIMARY KEY,
    owner_id   TEXT   NOT NULL,
    role       TEXT   NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
    email      TEXT   NOT NULL,
    created_by TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);
CREATE INDEX invitations_by_owner ON invitations (owner_id);
