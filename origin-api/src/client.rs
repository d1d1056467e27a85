//! Who is on the other end: the client's address and country, taken from a proxy's
//! headers only when the connection comes from a proxy the operator named. Anyone can
//! send `X-Forwarded-For` or `CF-IPCountry`; only a trusted proxy's word counts.

use axum::http::{HeaderMap, HeaderName};
use std::net::{IpAddr, SocketAddr};

/// The address of the client a request came from, when it came through
/// [`crate::server::serve`] (which records each connection's peer).
pub fn peer(req: &axum::http::request::Parts) -> Option<SocketAddr> {
    req.extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|axum::extract::ConnectInfo(a)| *a)
}

/// The operator's proxies and the headers they set.
#[derive(Debug, Clone)]
pub struct Proxies {
    trusted: Vec<ipnet::IpNet>,
    client_ip_header: HeaderName,
    country_header: HeaderName,
}

impl Proxies {
    pub fn new(
        trusted: Vec<ipnet::IpNet>,
        client_ip_header: HeaderName,
        country_header: HeaderName,
    ) -> Self {
        Proxies {
            trusted,
            client_ip_header,
            country_header,
        }
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        self.trusted.iter().any(|net| net.contains(&ip))
    }

    /// The client's address: the peer's, unless the peer is a trusted proxy, in which
    /// case the nearest address its header names that is not itself a trusted proxy
    /// (`X-Forwarded-For` lists the hops, the client first; each proxy appends).
    pub fn client_ip(&self, peer: Option<SocketAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let peer = peer?.ip();
        if !self.trusts(peer) {
            return Some(peer);
        }
        let named = headers
            .get_all(&self.client_ip_header)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect::<Vec<_>>();
        let mut nearest = peer;
        for hop in named.iter().rev() {
            let Ok(ip) = hop.parse::<IpAddr>() else {
                // A hop that is not an address: nothing before it can be believed.
                break;
            };
            nearest = ip;
            if !self.trusts(ip) {
                break;
            }
        }
        Some(nearest)
    }

    /// The visitor's country as a trusted proxy reports it (`CF-IPCountry` when
    /// Cloudflare proxies the origin); from anyone else, nothing.
    pub fn country<'h>(
        &self,
        peer: Option<SocketAddr>,
        headers: &'h HeaderMap,
    ) -> Option<&'h axum::http::HeaderValue> {
        peer.filter(|p| self.trusts(p.ip()))
            .and_then(|_| headers.get(&self.country_header))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies() -> Proxies {
        Proxies::new(
            vec!["10.0.0.0/8".parse().unwrap()],
            HeaderName::from_static("x-forwarded-for"),
            HeaderName::from_static("cf-ipcountry"),
        )
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_a_trusted_proxy_is_believed() {
        let p = proxies();
        let outsider: SocketAddr = "203.0.113.9:5000".parse().unwrap();
        let proxy: SocketAddr = "10.1.1.1:5000".parse().unwrap();
        let forged = headers(&[("x-forwarded-for", "1.2.3.4"), ("cf-ipcountry", "US")]);
        assert_eq!(p.client_ip(Some(outsider), &forged), Some(outsider.ip()));
        assert!(p.country(Some(outsider), &forged).is_none());
        // Through the proxy: the nearest hop it did not add itself.
        let chain = headers(&[("x-forwarded-for", "6.6.6.6, 1.2.3.4, 10.2.2.2")]);
        assert_eq!(
            p.client_ip(Some(proxy), &chain),
            Some("1.2.3.4".parse().unwrap())
        );
        assert_eq!(
            p.country(Some(proxy), &forged).map(|v| v.as_bytes()),
            Some(&b"US"[..])
        );
        // A proxy that names no client: the proxy itself.
        assert_eq!(
            p.client_ip(Some(proxy), &HeaderMap::new()),
            Some(proxy.ip())
        );
        let junk = headers(&[("x-forwarded-for", "1.2.3.4, not-an-ip")]);
        assert_eq!(p.client_ip(Some(proxy), &junk), Some(proxy.ip()));
    }
}
