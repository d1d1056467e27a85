//! Password links (issue 17): what the edge and the origin share of them.
//!
//! A visit without the link's cookie gets a form (403, a page of its own with no
//! external assets and nothing of the target). The form posts the password back to the
//! short URL. The adapter first takes one of the link's attempts from [`Attempts`]
//! (so a flood of guesses costs no hashing), then hashes the password with its own
//! crypto (PBKDF2-HMAC-SHA256: WebCrypto at the edge, the `pbkdf2` crate at the origin)
//! and compares in constant time ([`Check::matches`]). The right password returns the
//! attempt and earns a cookie for that link's path alone ([`set_cookie`]); the answer
//! is a 303 back to the short URL, whose `GET` then decides as for any visit. So the
//! `POST` never carries the target, and the click is counted once, by the `GET`.

pub use crate::access::{cookie_message, COOKIE};
use crate::access::{hex_decode, Access};
use crate::html::escape;
use crate::route::RouteKey;
use subtle::ConstantTimeEq;

/// How long a visitor who gave the password is let in without giving it again.
pub const COOKIE_TTL_S: i64 = 3600;
/// PBKDF2 rounds for a new password: the most the Workers runtime computes (it refuses
/// more), and what OWASP asks of PBKDF2-HMAC-SHA256 within a factor of six.
pub const ITERATIONS: u32 = 100_000;
/// A password's length, in characters: at least...
pub const MIN_CHARS: usize = 8;
/// ...and at most, in bytes (a form field longer than this is not read).
pub const MAX_BYTES: usize = 256;
/// The largest form body read: a password field at its longest, percent-encoded.
pub const MAX_FORM_BYTES: usize = 3 * MAX_BYTES + 64;
/// Wrong passwords one client may give one link per [`WINDOW_MS`], per isolate (at the
/// origin, per process): a visitor who mistypes has room, a guesser does not.
pub const CLIENT_FAILURES_PER_WINDOW: u32 = 5;
/// Wrong passwords one link takes per [`WINDOW_MS`] from clients that have failed
/// before, per isolate (per process): the ceiling of a guesser who changes addresses.
/// A client that has not failed at the link is still let try, so no one can lock a
/// link's audience out by failing at it...
pub const LINK_FAILURES_PER_WINDOW: u32 = 100;
/// ...up to this many wrong passwords a window from anyone, past which every attempt
/// waits for the window to close. Without it, a guesser rotating through more addresses
/// than a link tracks ([`CLIENTS_PER_LINK`]) would look new on every turn.
pub const LINK_ALL_FAILURES_PER_WINDOW: u32 = 2 * LINK_FAILURES_PER_WINDOW;
pub const WINDOW_MS: i64 = 60_000;
/// Links whose failures are tracked at once. Past that, the link with the fewest
/// failures is forgotten: a flood of single failures at other links cannot refuse a link
/// nobody failed at, nor wipe the count of the link under attack (it has the most).
pub const TRACKED_LINKS: usize = 4096;
/// Clients tracked per link; past that, the one with the fewest failures is forgotten.
pub const CLIENTS_PER_LINK: usize = 16;

/// Who gives a password, as the adapters know them: an IPv4 address, or the /64 of an
/// IPv6 one (a client holds a whole /64). Unknown clients share one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Client(u128);

impl Client {
    /// The client at `ip`; `None` (no address known) is one shared client. An IPv4
    /// address mapped into IPv6 (`::ffff:a.b.c.d`, as a dual-stack listener sees an
    /// IPv4 client) is that IPv4 address.
    pub fn of(ip: Option<core::net::IpAddr>) -> Client {
        match ip.map(|ip| ip.to_canonical()) {
            None => Client(0),
            Some(core::net::IpAddr::V4(a)) => Client(1 << 64 | u128::from(u32::from(a))),
            Some(core::net::IpAddr::V6(a)) => Client(u128::from(a) >> 64 | 1 << 65),
        }
    }

    /// The client as one number (0: unknown), for keyed hashes of it.
    pub fn bits(self) -> u128 {
        self.0
    }

    /// The client a header names (`CF-Connecting-IP`), if it is an address.
    pub fn named(header: Option<&str>) -> Client {
        Client::of(header.and_then(|h| h.trim().parse().ok()))
    }
}

/// The `Set-Cookie` value that lets the visitor into `route` until `expires_s`:
/// `HttpOnly` (no script reads it), `Secure` (never sent over plain HTTP, so a
/// password link needs HTTPS, or `localhost`), `SameSite=Lax`, and a path of the
/// link's own.
pub fn set_cookie(route: &RouteKey, expires_s: i64, now_s: i64, mac: &[u8]) -> String {
    let mac: String = mac.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{COOKIE}={expires_s}.{mac}; Max-Age={}; Path=/{}; HttpOnly; Secure; SameSite=Lax",
        expires_s - now_s,
        route.code()
    )
}

/// The password a form body carries, if it has one of a length worth hashing.
pub fn form_password(body: &[u8]) -> Option<String> {
    if body.len() > MAX_FORM_BYTES {
        return None;
    }
    url::form_urlencoded::parse(body)
        .find(|(name, _)| name == "password")
        .map(|(_, value)| value.into_owned())
        .filter(|p| !p.is_empty() && p.len() <= MAX_BYTES)
}

/// Whether `password` may be a link's password; the reason when not.
pub fn check_new(password: &str) -> Result<(), String> {
    if password.chars().count() < MIN_CHARS {
        Err(format!("at least {MIN_CHARS} characters"))
    } else if password.len() > MAX_BYTES {
        Err(format!("at most {MAX_BYTES} bytes"))
    } else {
        Ok(())
    }
}

/// A password link's secrets, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub salt: Vec<u8>,
    pub hash: Vec<u8>,
    pub iterations: u32,
    /// Signs the cookie.
    pub key: Vec<u8>,
}

impl Check {
    /// `None` for a link that takes no password, or a corrupt copy.
    pub fn of(access: &Access) -> Option<Check> {
        let Access::Password {
            salt,
            hash,
            iterations,
            key,
        } = access
        else {
            return None;
        };
        Some(Check {
            salt: hex_decode(salt)?,
            hash: hex_decode(hash)?,
            iterations: *iterations,
            key: hex_decode(key)?,
        })
    }

    /// Whether `derived` (PBKDF2 of what the visitor typed) is the link's hash, compared
    /// in constant time.
    pub fn matches(&self, derived: &[u8]) -> bool {
        bool::from(self.hash.ct_eq(derived))
    }
}

/// Failed password attempts per link and per client of it, in fixed windows. Lists
/// searched in full rather than maps: they are read only when a password is posted, are
/// bounded ([`TRACKED_LINKS`], [`CLIENTS_PER_LINK`]), and a hash map's code cost the
/// edge's WebAssembly more.
#[derive(Debug, Default)]
pub struct Attempts {
    links: Vec<Window>,
}

#[derive(Debug, Clone)]
struct Window {
    route: String,
    opened_ms: i64,
    /// Failures at the link in this window, from every client.
    used: u32,
    /// Failures per client in this window.
    clients: Vec<(Client, u32)>,
}

impl Window {
    fn closes(&self) -> i64 {
        self.opened_ms + WINDOW_MS
    }
}

/// The index of the entry with the fewest failures, to forget when a list is full.
fn least_failed<T>(list: &[T], failures: impl Fn(&T) -> u32) -> Option<usize> {
    (0..list.len()).min_by_key(|&i| failures(&list[i]))
}

impl Attempts {
    /// Takes one attempt by `client` at `route`'s password at `now_ms`; `Err(seconds)`:
    /// refused, try again after that long. A client is refused once it has used its own
    /// failures ([`CLIENT_FAILURES_PER_WINDOW`]), or when it has failed here before and
    /// the link has taken its ceiling ([`LINK_FAILURES_PER_WINDOW`]); a client that has
    /// not failed here is refused only past [`LINK_ALL_FAILURES_PER_WINDOW`].
    pub fn take(&mut self, route: &RouteKey, client: Client, now_ms: i64) -> Result<(), u32> {
        let i = match self.links.iter().position(|w| w.route == route.as_str()) {
            Some(i) => i,
            None => {
                if self.links.len() >= TRACKED_LINKS {
                    self.links.retain(|w| now_ms < w.closes());
                }
                if self.links.len() >= TRACKED_LINKS {
                    if let Some(i) = least_failed(&self.links, |w| w.used) {
                        self.links.swap_remove(i);
                    }
                }
                self.links.push(Window {
                    route: route.as_str().to_owned(),
                    opened_ms: now_ms,
                    used: 0,
                    clients: Vec::new(),
                });
                self.links.len() - 1
            }
        };
        let w = &mut self.links[i];
        if now_ms >= w.closes() {
            w.opened_ms = now_ms;
            w.used = 0;
            w.clients.clear();
        }
        let mine = w.clients.iter().position(|(c, _)| *c == client);
        let failed = mine.map_or(0, |j| w.clients[j].1);
        if failed >= CLIENT_FAILURES_PER_WINDOW
            || (failed > 0 && w.used >= LINK_FAILURES_PER_WINDOW)
            || w.used >= LINK_ALL_FAILURES_PER_WINDOW
        {
            let ms = (w.closes() - now_ms).clamp(1, WINDOW_MS);
            return Err(u32::try_from((ms + 999) / 1000).unwrap_or(60));
        }
        w.used = w.used.saturating_add(1);
        match mine {
            Some(j) => w.clients[j].1 += 1,
            None => {
                if w.clients.len() >= CLIENTS_PER_LINK {
                    if let Some(j) = least_failed(&w.clients, |(_, n)| *n) {
                        w.clients.swap_remove(j);
                    }
                }
                w.clients.push((client, 1));
            }
        }
        Ok(())
    }

    /// Gives back the attempt the right password took: only failures count.
    pub fn give_back(&mut self, route: &RouteKey, client: Client) {
        if let Some(w) = self.links.iter_mut().find(|w| w.route == route.as_str()) {
            w.used = w.used.saturating_sub(1);
            if let Some((_, n)) = w.clients.iter_mut().find(|(c, _)| *c == client) {
                *n = n.saturating_sub(1);
            }
        }
    }
}

/// What came of a password posted to a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tried {
    /// The form carried no password worth hashing.
    Missing,
    Wrong,
    /// The link's attempts are used up for now: retry after this many seconds.
    Limited(u32),
    /// Let in: the `Set-Cookie` value ([`set_cookie`]).
    Right(String),
}

/// The page up to the form's fields. The form is keyed by link for a password manager:
/// every link of a domain shares its origin, which is all a manager keys a saved
/// password by, so the form names its link as the login's username (a hidden field, as
/// managers' own guidance has it) and a password saved for one link is offered for
/// that link only, never filled into another's.
const FORM_HEAD: &str = concat!(
    crate::html::visitor_head!("Password required"),
    "<h1>Password required</h1>",
    "<p>This link is protected. Enter its password to continue.</p>",
);
const FORM_FIELDS: &str = concat!(
    "<label for=\"password\">Password</label>",
    "<input id=\"password\" type=\"password\" name=\"password\" ",
    "autocomplete=\"current-password\" required autofocus>",
    "<button type=\"submit\">Continue</button></form></main></body></html>\n"
);

/// Which form: as first shown, after a wrong password, or once the link's attempts
/// are used up for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    First,
    Wrong,
    Limited,
}

/// The password form of the link `route`.
pub fn form(route: &RouteKey, which: Form) -> String {
    let note = match which {
        Form::First => "",
        Form::Wrong => "<p class=\"note\" role=\"alert\">That password is not right.</p>",
        Form::Limited => {
            "<p class=\"note\" role=\"alert\">Too many wrong passwords. Wait a minute, then try again.</p>"
        }
    };
    format!(
        "{FORM_HEAD}{note}<form method=\"post\"><input type=\"text\" name=\"link\" \
         autocomplete=\"username\" value=\"{}\" hidden readonly>{FORM_FIELDS}",
        escape(route.as_str())
    )
}

/// The form's `Content-Security-Policy`: nothing loads, the form posts only to its own
/// origin, and no other site frames it (to trick a visitor into typing).
pub const FORM_POLICY: &str =
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'";

#[cfg(test)]
mod tests {
    use super::*;

    fn route(code: &str) -> RouteKey {
        RouteKey::new("s.example", code).unwrap()
    }

    fn client(n: u32) -> Client {
        Client::of(Some(core::net::IpAddr::V4(core::net::Ipv4Addr::from(n))))
    }

    #[test]
    fn a_client_takes_five_wrong_passwords_a_minute_at_a_link_and_no_more() {
        let mut a = Attempts::default();
        let (r, other) = (route("pass1"), route("pass2"));
        let guesser = client(1);
        for _ in 0..CLIENT_FAILURES_PER_WINDOW {
            assert_eq!(a.take(&r, guesser, 1_000), Ok(()));
        }
        assert_eq!(a.take(&r, guesser, 1_000), Err(60));
        assert_eq!(a.take(&r, guesser, 59_500), Err(2));
        // Another link is not held back by this one's failures.
        assert_eq!(a.take(&other, guesser, 1_000), Ok(()));
        // The window closes; the count starts again.
        assert_eq!(a.take(&r, guesser, 61_000), Ok(()));
        // The right password gives its attempt back.
        let mut b = Attempts::default();
        for _ in 0..100 {
            assert_eq!(b.take(&r, guesser, 0), Ok(()));
            b.give_back(&r, guesser);
        }
    }

    /// One client's failures never refuse another: while a guesser waits, the link's
    /// audience still gets in, and a client that has not failed is let try even once
    /// the link has taken its ceiling of failures from clients that had.
    #[test]
    fn a_throttled_client_locks_no_one_else_out() {
        let mut a = Attempts::default();
        let r = route("pass1");
        for _ in 0..CLIENT_FAILURES_PER_WINDOW {
            a.take(&r, client(1), 0).unwrap();
        }
        assert!(a.take(&r, client(1), 0).is_err());
        assert_eq!(a.take(&r, client(2), 0), Ok(()), "another client");
        // Addresses of one IPv6 /64 are one client; another /64 is another.
        let v6 = |s: &str| Client::of(Some(s.parse().unwrap()));
        assert_eq!(v6("2001:db8:1:2::1"), v6("2001:db8:1:2:ffff::9"));
        assert_ne!(v6("2001:db8:1:2::1"), v6("2001:db8:1:3::1"));
        // An IPv4 client seen by a dual-stack listener is that IPv4 client.
        assert_eq!(v6("::ffff:192.0.2.1"), Client::named(Some("192.0.2.1")));
        assert_ne!(v6("::ffff:192.0.2.1"), Client::named(Some("192.0.2.2")));
        assert_eq!(
            Client::named(Some(" 192.0.2.1 ")),
            Client::named(Some("192.0.2.1"))
        );

        // Many clients, each failing: the link's ceiling stops those who failed before.
        let mut b = Attempts::default();
        let mut n = 0;
        while n < LINK_FAILURES_PER_WINDOW {
            for _ in 0..2 {
                b.take(&r, client(1000 + n), 0).unwrap();
            }
            n += 2;
        }
        let last = client(1000 + n - 2);
        assert!(
            b.take(&r, last, 0).is_err(),
            "failed before, over the ceiling"
        );
        assert_eq!(b.take(&r, client(9), 0), Ok(()), "never failed here");
        assert!(b.take(&r, client(9), 0).is_err(), "now it has");
        // Rotating through more addresses than the link tracks: bounded all the same.
        let fresh = (0..LINK_ALL_FAILURES_PER_WINDOW)
            .filter(|i| b.take(&r, client(5000 + i), 0).is_ok())
            .count();
        assert_eq!(
            fresh as u32,
            LINK_ALL_FAILURES_PER_WINDOW - LINK_FAILURES_PER_WINDOW - 1
        );
        assert!(b.take(&r, client(1), 0).is_err());
    }

    /// When the table is full, the link with the fewest failures is forgotten: 4,096
    /// other links' failures neither refuse a link nobody failed at nor wipe the count
    /// of the link under attack.
    #[test]
    fn a_flood_of_other_links_neither_refuses_a_link_nor_wipes_one_s_count() {
        let mut a = Attempts::default();
        let target = route("target1");
        let guesser = client(1);
        for _ in 0..CLIENT_FAILURES_PER_WINDOW {
            a.take(&target, guesser, 0).unwrap();
        }
        for i in 0..TRACKED_LINKS * 2 {
            a.take(&route(&format!("flood{i}")), client(2), 10)
                .expect("every other link takes a first failure");
        }
        assert!(a.links.len() <= TRACKED_LINKS);
        assert!(a.take(&target, guesser, 20).is_err(), "its count survived");
        assert_eq!(a.take(&route("quiet1"), client(3), 20), Ok(()));
    }

    #[test]
    fn the_form_reads_the_password_field_only_within_bounds() {
        assert_eq!(
            form_password(b"password=s%C3%A9same+ouvre-toi&x=1").as_deref(),
            Some("sésame ouvre-toi")
        );
        assert_eq!(form_password(b"x=1"), None);
        assert_eq!(form_password(b"password="), None);
        let long = format!("password={}", "a".repeat(MAX_BYTES + 1));
        assert_eq!(form_password(long.as_bytes()), None);
        assert_eq!(form_password(&[b'a'; MAX_FORM_BYTES + 1]), None);
        assert!(check_new("short").is_err());
        assert!(check_new("long enough").is_ok());
        assert!(check_new(&"é".repeat(MAX_BYTES / 2 + 1)).is_err());
    }

    #[test]
    fn the_cookie_is_for_the_link_s_path_alone_and_script_cannot_read_it() {
        let c = set_cookie(&route("pass1"), 4_600, 1_000, &[0xab; 32]);
        assert_eq!(
            c,
            format!(
                "hop_pass=4600.{}; Max-Age=3600; Path=/pass1; HttpOnly; Secure; SameSite=Lax",
                "ab".repeat(32)
            )
        );
    }

    #[test]
    fn the_form_loads_nothing_and_names_nothing_of_the_target() {
        let route = RouteKey::parse("s.example/7Fk3aQx").expect("route");
        let other = RouteKey::parse("s.example/other").expect("route");
        for which in [Form::First, Form::Wrong, Form::Limited] {
            let page = form(&route, which);
            assert!(page.contains("<form method=\"post\""));
            assert!(!page.contains("src="), "no external asset");
            assert!(!page.contains("http"), "no URL at all");
            // Every link of a domain shares its origin, which is all a password manager
            // keys a saved password by: the form names its link as the username, so a
            // password saved for one link is not filled into another's.
            assert!(
                page.contains("autocomplete=\"username\" value=\"s.example/7Fk3aQx\""),
                "{page}"
            );
            assert_ne!(page, form(&other, which));
            assert!(page.contains("autocomplete=\"current-password\""), "{page}");
        }
        assert!(form(&route, Form::Wrong).contains("not right"));
        assert!(form(&route, Form::Limited).contains("Too many"));
    }

    #[test]
    fn the_hash_is_compared_whole() {
        let check = Check::of(&Access::Password {
            salt: "00".into(),
            hash: "abcd".into(),
            iterations: 1,
            key: "ff".into(),
        })
        .unwrap();
        assert!(check.matches(&[0xab, 0xcd]));
        assert!(!check.matches(&[0xab]));
        assert!(!check.matches(&[0xab, 0xce]));
        assert_eq!(Check::of(&Access::Signed { key: "ff".into() }), None);
    }
}
