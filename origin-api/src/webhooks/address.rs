//! Where a webhook may be sent: never to the origin's own network unless the operator
//! allows it (`--webhook-allow-private`). An endpoint's URL is judged when it is
//! registered, and every address its name resolves to is judged again at each
//! connection, so a name that later points inside (DNS rebinding) reaches nothing.

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use shared::target::{ip_non_public, validate_target};
use std::net::SocketAddr;

/// Why an endpoint URL is refused; `None`: it may be used.
pub fn refuse(url: &str, allow_private: bool) -> Option<String> {
    if url.len() > crate::views::webhooks::MAX_URL_LEN {
        return Some(format!(
            "at most {} bytes",
            crate::views::webhooks::MAX_URL_LEN
        ));
    }
    let target = match validate_target(url) {
        Ok(t) => t,
        Err(e) => return Some(e.to_string().replace("target_url", "url")),
    };
    if allow_private {
        return None;
    }
    if !target.as_str().starts_with("https://") {
        return Some("must be https (plain http only with --webhook-allow-private)".into());
    }
    target
        .non_public()
        .map(|why| format!("names {why}; a webhook goes to a public address"))
}

/// The resolver deliveries connect through: the system's, less non-public addresses.
#[derive(Debug, Clone, Copy)]
pub struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| ip_non_public(a.ip()).is_none())
                .collect();
            if found.is_empty() {
                return Err(format!("{host} has no public address").into());
            }
            let addrs: Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_https_url_passes_and_an_inside_one_does_not() {
        assert_eq!(refuse("https://hooks.example.com/hop", false), None);
        for inside in [
            "https://127.0.0.1/x",
            "https://169.254.169.254/latest",
            "https://[::1]/x",
            "https://localhost/x",
            "https://10.0.0.8/x",
            "https://intranet/x",
        ] {
            assert!(refuse(inside, false).is_some(), "{inside}");
            assert_eq!(refuse(inside, true), None, "{inside}");
        }
        assert!(refuse("http://hooks.example.com/hop", false).is_some());
        assert!(refuse("ftp://hooks.example.com/hop", true).is_some());
        assert!(refuse("https://user:pw@hooks.example.com/", true).is_some());
        assert!(refuse(&format!("https://a.example/{}", "x".repeat(2100)), true).is_some());
    }
}
