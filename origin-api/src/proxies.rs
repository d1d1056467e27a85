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

/// Whether a connection to `ip:port` would reach a listener bound to `listen`: its own
/// address, or, for a wildcard listener (`0.0.0.0`, `[::]`), any address of this
/// machine: a loopback or unspecified address, or any interface's. (`[::]` takes IPv4
/// too on most systems, so either wildcard counts for both families.)
pub fn reaches_listener(listen: SocketAddr, ip: IpAddr, port: u16) -> bool {
    if port != listen.port() {
        return false;
    }
    let ip = ip.to_canonical();
    if ip == listen.ip().to_canonical() {
        return true;
    }
    listen.ip().is_unspecified()
        && (ip.is_loopback() || ip.is_unspecified() || interface_addresses().contains(&ip))
}

/// The addresses of this machine's interfaces (none when they cannot be read).
fn interface_addresses() -> Vec<IpAddr> {
    let Ok(interfaces) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    interfaces
        .filter_map(|i| i.address)
        .filter_map(|a| {
            a.as_sockaddr_in()
                .map(|v4| IpAddr::V4(v4.ip()))
                .or_else(|| a.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip())))
        })
        .map(|ip| ip.to_canonical())
        .collect()
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
    /// A wildcard listener is reached at every address of the machine: a target on any
    /// of them with the listener's port is a loop, not only one on `0.0.0.0`.
    #[test]
    fn a_wildcard_listener_is_reached_at_every_address_of_the_machine() {
        let ip = |s: &str| -> IpAddr { s.parse().unwrap() };
        let any: SocketAddr = "0.0.0.0:3000".parse().unwrap();
        for reached in [
            "127.0.0.1",
            "127.0.0.2",
            "0.0.0.0",
            "::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(reaches_listener(any, ip(reached), 3000), "{reached}");
        }
        let own = interface_addresses();
        if let Some(own) = own.iter().find(|a| !a.is_loopback()) {
            assert!(reaches_listener(any, *own, 3000), "{own}");
        }
        assert!(!reaches_listener(any, ip("8.8.8.8"), 3000));
        assert!(!reaches_listener(any, ip("127.0.0.1"), 3001));
        let one: SocketAddr = "127.0.0.1:3000".parse().unwrap();
        assert!(reaches_listener(one, ip("127.0.0.1"), 3000));
        assert!(!reaches_listener(one, ip("127.0.0.2"), 3000));
        let v6: SocketAddr = "[::]:3000".parse().unwrap();
        assert!(reaches_listener(v6, ip("127.0.0.1"), 3000));
    }

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
