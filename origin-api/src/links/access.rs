//! Private links at the origin: issuing a signed link's tokens, hashing a password
//! link's password, and checking both on the origin's own redirect exactly as the edge
//! does (`shared::access` and `shared::password` say what is signed and hashed; the
//! MAC here is the `hmac` crate's, compared in constant time, the hash `pbkdf2`'s).

use crate::views::links::{IssueToken, IssuedToken};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use shared::access::{hex_decode, signed_message, Access, Challenge, SECRET_BYTES};
use shared::password::{self, Attempts, Check, Client, Tried};
use shared::RouteKey;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

type HmacSha256 = Hmac<Sha256>;

/// A new secret for a link set to signed access: every token signed with the one it
/// replaces stops opening the link.
pub fn new_signed() -> Result<Access, getrandom::Error> {
    Ok(Access::Signed {
        key: crate::random_ids::random_hex::<SECRET_BYTES>()?,
    })
}

/// The token that opens `route` under `access` until `expires_s` (Unix seconds):
/// `{expires_s}.{hex MAC}`.
pub fn token(access: &Access, route: &str, expires_s: i64) -> Option<String> {
    let Access::Signed { key } = access else {
        return None;
    };
    let mut mac = HmacSha256::new_from_slice(&hex_decode(key)?).ok()?;
    mac.update(signed_message(route, expires_s).as_bytes());
    Some(format!(
        "{expires_s}.{}",
        crate::random_ids::hex(&mac.finalize().into_bytes())
    ))
}

/// Whether the visit opens `route` under `access` at `now_s`: a signed link's token in
/// its raw `query`, a password link's cookie in its `Cookie` header.
pub fn opens(
    access: &Access,
    route: &RouteKey,
    query: Option<&str>,
    cookie: Option<&str>,
    now_s: i64,
) -> bool {
    let Some(c) = Challenge::of(access, route, query, cookie, now_s) else {
        return false;
    };
    let Ok(mut mac) = HmacSha256::new_from_slice(&c.key) else {
        return false;
    };
    mac.update(c.message.as_bytes());
    mac.verify_slice(&c.mac).is_ok()
}

/// Bytes of a new password's salt.
const SALT_BYTES: usize = 16;

/// A link's password, hashed with a salt of its own, and a new key for its cookies:
/// every visitor let in under the password it replaces must give the new one.
/// Hashes `typed` with a new salt: slow on purpose, so only through [`Hashing::run`].
pub fn new_password(typed: &str) -> Result<Access, getrandom::Error> {
    let salt = crate::random_ids::random_bytes::<SALT_BYTES>()?;
    Ok(Access::Password {
        salt: crate::random_ids::hex(&salt),
        hash: crate::random_ids::hex(&pbkdf2(typed.as_bytes(), &salt, password::ITERATIONS)),
        iterations: password::ITERATIONS,
        key: crate::random_ids::random_hex::<SECRET_BYTES>()?,
    })
}

/// What a dry run's link holds for a password it checked and did not hash: no salt, no
/// hash, no key. Never stored (a dry run stores nothing), and no visitor's password
/// could open it.
pub fn unhashed_password() -> Access {
    Access::Password {
        salt: String::new(),
        hash: String::new(),
        iterations: 0,
        key: String::new(),
    }
}

/// PBKDF2-HMAC-SHA256, 256 bits: what the edge's `crypto.subtle.deriveBits` computes.
fn pbkdf2(typed: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(typed, salt, iterations)
}

/// Every PBKDF2 this process runs, whoever asks for it (a visitor's password, a new or
/// changed link's): at most one per core at once, each on the blocking pool, and a
/// bounded line behind them. Past the line the caller is told to come back ([`Busy`]),
/// so that a flood of password links created, changed or visited cannot take every
/// thread nor queue without end.
#[derive(Debug)]
pub struct Hashing {
    permits: tokio::sync::Semaphore,
    size: usize,
    /// How many may wait for a permit.
    line: usize,
    waiting: AtomicUsize,
    running: AtomicUsize,
    /// The most that ever ran at once (for tests and benchmarks).
    peak: AtomicUsize,
    /// Hashes started, ever.
    started: std::sync::atomic::AtomicU64,
}

/// The hashing gate's line is full: retry shortly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("too many passwords are being hashed; retry in a second")]
pub struct Busy;

/// How long a caller turned away by [`Busy`] is told to wait.
pub const BUSY_RETRY_AFTER_S: u64 = 1;

impl Hashing {
    /// `size` hashes at once, and up to `line` callers waiting for one.
    pub fn new(size: usize, line: usize) -> Self {
        Hashing {
            permits: tokio::sync::Semaphore::new(size.max(1)),
            size: size.max(1),
            line,
            waiting: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            started: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Runs `hash` on the blocking pool once a permit is free; `Err(Busy)` at once when
    /// the line is full.
    pub async fn run<T, F>(&self, hash: F) -> Result<T, Busy>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.line {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(Busy);
        }
        let permit = self.permits.acquire().await;
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        // The semaphore is never closed.
        let Ok(_permit) = permit else {
            return Err(Busy);
        };
        self.started.fetch_add(1, Ordering::AcqRel);
        let now = self.running.fetch_add(1, Ordering::AcqRel) + 1;
        self.peak.fetch_max(now, Ordering::AcqRel);
        let done = tokio::task::spawn_blocking(hash).await;
        self.running.fetch_sub(1, Ordering::AcqRel);
        // A hash that panicked is a fault, reported as the gate being unable to serve.
        done.map_err(|_| Busy)
    }

    /// How many may hash at once.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The most that ever hashed at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Acquire)
    }

    /// How many hashes this gate ever started.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::Acquire)
    }
}

/// Password attempts at this origin: the wrong ones counted per link and client (as
/// each edge isolate counts them), and every hash through one [`Hashing`] gate.
#[derive(Debug)]
pub struct PasswordGate {
    attempts: Mutex<Attempts>,
    pub hashing: Hashing,
}

/// Callers that may wait for a hash, per core.
const LINE_PER_CORE: usize = 32;

impl Default for PasswordGate {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        PasswordGate {
            attempts: Mutex::new(Attempts::default()),
            hashing: Hashing::new(cores, cores * LINE_PER_CORE),
        }
    }
}

impl PasswordGate {
    /// What comes of the form `body` posted to `route`, a link with `access`, at
    /// `now_ms`. `Err`: the link's secrets are corrupt, or the hashing failed.
    pub async fn attempt(
        &self,
        access: &Access,
        route: &RouteKey,
        client: Client,
        body: &[u8],
        now_ms: i64,
    ) -> Result<Tried, String> {
        let check = Check::of(access).ok_or("the link's password secrets are not hex")?;
        let Some(typed) = password::form_password(body) else {
            return Ok(Tried::Missing);
        };
        // Taken before hashing: a flood of guesses costs no PBKDF2.
        let taken = self
            .attempts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(route, client, now_ms);
        if let Err(retry_after_s) = taken {
            return Ok(Tried::Limited(retry_after_s));
        }
        let (salt, iterations) = (check.salt.clone(), check.iterations);
        let derived = self
            .hashing
            .run(move || pbkdf2(typed.as_bytes(), &salt, iterations))
            .await
            .map_err(|e| e.to_string())?;
        if !check.matches(&derived) {
            return Ok(Tried::Wrong);
        }
        self.attempts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .give_back(route, client);
        let now_s = now_ms.div_euclid(1000);
        let expires_s = now_s + password::COOKIE_TTL_S;
        let mut mac = HmacSha256::new_from_slice(&check.key).map_err(|e| e.to_string())?;
        mac.update(password::cookie_message(route, expires_s).as_bytes());
        let mac = mac.finalize().into_bytes();
        Ok(Tried::Right(password::set_cookie(
            route, expires_s, now_s, &mac,
        )))
    }
}

/// A token's longest life.
pub const MAX_TTL_S: u64 = 366 * 24 * 3600;
/// A token's life unless asked otherwise.
pub const DEFAULT_TTL_S: u64 = 24 * 3600;

/// A token for `link`, which must be signed and not deleted, as `asked` at `now` (ms).
pub fn issue(
    link: &crate::model::Link,
    asked: &IssueToken,
    now: i64,
) -> Result<IssuedToken, crate::error::AppError> {
    use crate::error::AppError;
    if link.status == crate::model::LinkState::Deleted {
        return Err(AppError::Deleted);
    }
    let access = match &link.options.access {
        Some(access @ Access::Signed { .. }) => access,
        Some(Access::Password { .. }) => return Err(AppError::invalid(
            "access",
            "the link opens with its password, not tokens: set \"access\": \"signed\" on it first",
        )),
        None => {
            return Err(AppError::invalid(
                "access",
                "the link is public: set \"access\": \"signed\" on it first",
            ))
        }
    };
    let now_s = now.div_euclid(1000);
    let expires_s = match (&asked.expires_at, asked.ttl_s) {
        (Some(_), Some(_)) => {
            return Err(AppError::invalid(
                "expires_at",
                "give expires_at or ttl_s, not both",
            ))
        }
        (Some(at), None) => {
            let ms = crate::model::time::parse_rfc3339(at).ok_or_else(|| {
                AppError::invalid("expires_at", "use RFC 3339, e.g. 2030-01-31T23:59:59Z")
            })?;
            let s = ms.div_euclid(1000);
            if s <= now_s || s - now_s > MAX_TTL_S as i64 {
                return Err(AppError::invalid(
                    "expires_at",
                    "must be in the future, at most 366 days ahead",
                ));
            }
            s
        }
        (None, ttl) => {
            let ttl = ttl.unwrap_or(DEFAULT_TTL_S);
            if !(1..=MAX_TTL_S).contains(&ttl) {
                return Err(AppError::invalid(
                    "ttl_s",
                    format!("1 to {MAX_TTL_S} seconds"),
                ));
            }
            now_s + ttl as i64
        }
    };
    let route = link.route_key();
    let token = token(access, &route, expires_s)
        .ok_or_else(|| AppError::Internal(format!("link {route}: its secret is not hex")))?;
    Ok(IssuedToken {
        url: format!("https://{route}?t={token}"),
        token,
        expires_at: crate::model::time::rfc3339(expires_s * 1000),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The edge derives with WebCrypto what this hashes: the vector is RFC 7914's
    /// PBKDF2-HMAC-SHA256 case (P "passwd", S "salt", c 1).
    #[test]
    fn the_hash_is_plain_pbkdf2_hmac_sha256() {
        assert_eq!(
            crate::random_ids::hex(&pbkdf2(b"passwd", b"salt", 1)),
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
        );
    }

    /// The gate runs at most its size at once, keeps a bounded line, and turns away at
    /// once whoever comes past it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_hashing_gate_runs_its_size_at_once_and_turns_away_past_its_line() {
        let gate = std::sync::Arc::new(Hashing::new(1, 1));
        let (release, held) = std::sync::mpsc::channel::<()>();
        let held = std::sync::Arc::new(std::sync::Mutex::new(held));
        let blocked = {
            let (gate, held) = (gate.clone(), held.clone());
            tokio::spawn(async move { gate.run(move || held.lock().unwrap().recv().is_ok()).await })
        };
        // The first holds the permit; the second waits in line; the third is turned away.
        while gate.peak() == 0 {
            tokio::task::yield_now().await;
        }
        let waiting = {
            let gate = gate.clone();
            tokio::spawn(async move { gate.run(|| true).await })
        };
        while gate.waiting.load(Ordering::Acquire) == 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(gate.run(|| true).await, Err(Busy));
        release.send(()).unwrap();
        assert_eq!(blocked.await.unwrap(), Ok(true));
        assert_eq!(waiting.await.unwrap(), Ok(true));
        assert_eq!(gate.peak(), 1);
    }

    #[tokio::test]
    async fn the_right_password_earns_a_cookie_that_opens_its_link_alone() {
        let access = new_password("correct horse").unwrap();
        let route = RouteKey::new("s.example", "pass1").unwrap();
        let gate = PasswordGate::default();
        let now = 1_800_000_000_000;
        let tried = |body: &'static str| {
            gate.attempt(&access, &route, Client::of(None), body.as_bytes(), now)
        };
        assert_eq!(tried("password=wrong+horse").await, Ok(Tried::Wrong));
        assert_eq!(tried("nothing=here").await, Ok(Tried::Missing));
        let Ok(Tried::Right(set)) = tried("password=correct+horse").await else {
            panic!("the right password was refused");
        };
        let cookie = set.split(';').next().unwrap();
        let now_s = now / 1000;
        assert!(opens(&access, &route, None, Some(cookie), now_s));
        assert!(!opens(
            &access,
            &route,
            None,
            Some(cookie),
            now_s + password::COOKIE_TTL_S
        ));
        let other = RouteKey::new("s.example", "pass2").unwrap();
        assert!(!opens(&access, &other, None, Some(cookie), now_s));
        // A new password is a new key: the cookie no longer opens the link.
        let renewed = new_password("correct horse").unwrap();
        assert!(!opens(&renewed, &route, None, Some(cookie), now_s));
        // Nor does the cookie's value as a token.
        let token = format!("t={}", cookie.trim_start_matches("hop_pass="));
        assert!(!opens(&access, &route, Some(&token), None, now_s));
    }

    #[test]
    fn a_token_opens_its_link_until_it_expires_and_nothing_else() {
        let access = new_signed().unwrap();
        let route = RouteKey::new("s.example", "secret1").unwrap();
        let token = token(&access, route.as_str(), 1_000).unwrap();
        let query = format!("t={token}");
        assert!(opens(&access, &route, Some(&query), None, 999));
        assert!(
            !opens(&access, &route, Some(&query), None, 1_000),
            "expired"
        );
        let other = RouteKey::new("s.example", "secret2").unwrap();
        assert!(
            !opens(&access, &other, Some(&query), None, 999),
            "another link"
        );
        // A later expiry with the same MAC, or a new secret, opens nothing.
        let (_, mac) = token.split_once('.').unwrap();
        assert!(!opens(
            &access,
            &route,
            Some(&format!("t=2000.{mac}")),
            None,
            999
        ));
        let rotated = new_signed().unwrap();
        assert!(!opens(&rotated, &route, Some(&query), None, 999));
        assert!(!opens(&access, &route, None, None, 0));
        // A token in a cookie opens nothing either.
        assert!(!opens(
            &access,
            &route,
            None,
            Some(&format!("hop_pass={token}")),
            999
        ));
    }

    /// The edge checks with WebCrypto what this signs: the vector is RFC 4231's test
    /// case 2 (key "Jefe"), the same bytes any HMAC-SHA256 gives.
    #[test]
    fn the_mac_is_plain_hmac_sha256() {
        let mut mac = HmacSha256::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        assert_eq!(
            crate::random_ids::hex(&mac.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
