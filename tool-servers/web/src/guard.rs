//! The SSRF guard: which URLs and addresses a fetch may reach.
//!
//! A model-driven fetch tool is a classic server-side request forgery vector:
//! a page (or a prompt injection in one) asks for `http://169.254.169.254/` (cloud
//! metadata and credentials), `http://localhost:8080/admin`, or a router at
//! `192.168.1.1`. Unless the operator opts out with `--allow-private`, every
//! address a request would connect to must be a public unicast address.
//!
//! Spellings do not matter here because we never look at the host text: the
//! `url` crate parses `2130706433`, `0x7f.1`, `0177.0.0.1` and `0` into the
//! IPv4 address they denote, IPv6 literals arrive as [`Ipv6Addr`], and names are
//! resolved before the addresses are checked (see `resolve.rs`).
//!
//! Everything in this file is pure, so the whole policy is unit-tested.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// Why an address is not reachable under the default policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocked {
    Loopback,
    Private,
    LinkLocal,
    Unspecified,
    SharedCgnat,
    Multicast,
    Broadcast,
    /// Documentation, benchmarking, protocol-assignment and future-use ranges:
    /// never a legitimate public web server.
    Reserved,
    /// An IPv6 unique local address (fc00::/7).
    UniqueLocal,
}

impl std::fmt::Display for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Blocked::Loopback => "a loopback address",
            Blocked::Private => "a private-network address",
            Blocked::LinkLocal => "a link-local address, where cloud metadata services live",
            Blocked::Unspecified => "the unspecified address",
            Blocked::SharedCgnat => "a carrier-grade NAT address",
            Blocked::Multicast => "a multicast address",
            Blocked::Broadcast => "the broadcast address",
            Blocked::Reserved => "a reserved address",
            Blocked::UniqueLocal => "an IPv6 unique local address",
        })
    }
}

/// Which addresses may be connected to.
#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    /// `--allow-private`: no address is refused.
    pub allow_private: bool,
    /// `--allow-addr`: these exact addresses are allowed even though they are
    /// not public (a local docs server, a test fixture).
    pub trusted: Vec<IpAddr>,
}

impl AddressPolicy {
    /// Ok when `ip` may be connected to under this policy.
    pub fn check(&self, ip: IpAddr) -> Result<(), Blocked> {
        if self.allow_private || self.trusted.contains(&canonical(ip)) {
            return Ok(());
        }
        classify(ip).map_or(Ok(()), Err)
    }
}

/// Why a URL is refused before any network traffic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlRefusal {
    #[error("scheme `{0}` is not allowed; only http and https can be fetched")]
    Scheme(String),
    #[error("the URL has no host")]
    NoHost,
    #[error("URLs with credentials (user:password@) are not fetched")]
    Credentials,
    #[error("{ip} is {reason}")]
    Address { ip: IpAddr, reason: Blocked },
}

/// Where a URL points, once its scheme and host are acceptable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// An IP literal, already checked against the policy.
    Address(IpAddr),
    /// A name: its addresses are checked when it is resolved.
    Name(String),
}

/// Checks what can be checked from the URL alone.
pub fn check_url(url: &Url, policy: &AddressPolicy) -> Result<Destination, UrlRefusal> {
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(UrlRefusal::Scheme(other.to_string())),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlRefusal::Credentials);
    }
    let ip = match url.host() {
        None => return Err(UrlRefusal::NoHost),
        Some(Host::Domain(name)) => {
            // A trailing dot or an all-numeric label set is still a name here;
            // `url` already turned every numeric IPv4 spelling into Host::Ipv4.
            return Ok(Destination::Name(name.to_string()));
        }
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip),
    };
    policy
        .check(ip)
        .map(|()| Destination::Address(ip))
        .map_err(|reason| UrlRefusal::Address { ip, reason })
}

/// The category of a non-public address, or `None` for a public unicast one.
pub fn classify(ip: IpAddr) -> Option<Blocked> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Blocked> {
    let [a, b, c, _] = ip.octets();
    if ip.is_unspecified() || a == 0 {
        // 0.0.0.0/8 is "this network"; Linux connects 0.0.0.0 to localhost.
        Some(Blocked::Unspecified)
    } else if ip.is_loopback() {
        Some(Blocked::Loopback)
    } else if ip.is_private() {
        Some(Blocked::Private)
    } else if ip.is_link_local() {
        Some(Blocked::LinkLocal)
    } else if a == 100 && (b & 0xC0) == 64 {
        Some(Blocked::SharedCgnat)
    } else if ip.is_broadcast() {
        Some(Blocked::Broadcast)
    } else if ip.is_multicast() {
        Some(Blocked::Multicast)
    } else if a >= 240
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 0 && c == 2)
        || (a == 198 && (b & 0xFE) == 18)
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
    {
        Some(Blocked::Reserved)
    } else {
        None
    }
}

fn classify_v6(ip: Ipv6Addr) -> Option<Blocked> {
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    let first = ip.segments()[0];
    if ip.is_unspecified() {
        Some(Blocked::Unspecified)
    } else if ip.is_loopback() {
        Some(Blocked::Loopback)
    } else if (first & 0xFE00) == 0xFC00 {
        Some(Blocked::UniqueLocal)
    } else if (first & 0xFFC0) == 0xFE80 || (first & 0xFFC0) == 0xFEC0 {
        // fe80::/10 link-local, and the deprecated site-local fec0::/10.
        Some(Blocked::LinkLocal)
    } else if ip.is_multicast() {
        Some(Blocked::Multicast)
    } else if (first == 0x2001 && ip.segments()[1] == 0x0db8) || first == 0x0100 {
        // 2001:db8::/32 documentation, 100::/64 discard-only.
        Some(Blocked::Reserved)
    } else {
        None
    }
}

/// The IPv4 address an IPv6 address stands for, when it embeds one that the
/// stack would reach: IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`
/// (deprecated, but still parsed), NAT64 `64:ff9b::a.b.c.d` and 6to4 `2002:AABB:CCDD::`.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new(
        (s[6] >> 8) as u8,
        (s[6] & 0xFF) as u8,
        (s[7] >> 8) as u8,
        (s[7] & 0xFF) as u8,
    );
    match s {
        [0, 0, 0, 0, 0, 0xFFFF, _, _] => Some(low),
        // `::` and `::1` are the IPv6 unspecified and loopback addresses, not IPv4.
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => Some(low),
        [0x64, 0xFF9B, 0, 0, 0, 0, _, _] => Some(low),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            (hi & 0xFF) as u8,
            (lo >> 8) as u8,
            (lo & 0xFF) as u8,
        )),
        _ => None,
    }
}

/// The form an address is compared in for `trusted`: IPv4-mapped IPv6 as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deny() -> AddressPolicy {
        AddressPolicy::default()
    }

    fn refusal(url: &str) -> UrlRefusal {
        let url = Url::parse(url).unwrap();
        check_url(&url, &deny()).unwrap_err()
    }

    #[test]
    fn every_spelling_of_loopback_is_refused() {
        for spelling in [
            "http://127.0.0.1/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0x7f.1/",
            "http://0177.0.0.1/",
            "http://017700000001/",
            "http://127.255.255.254:8080/x",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[0:0:0:0:0:ffff:127.0.0.1]/",
            "http://[::127.0.0.1]/",
            "http://[64:ff9b::127.0.0.1]/",
            "http://[2002:7f00:1::]/",
            "https://[::1]:443/",
        ] {
            match refusal(spelling) {
                UrlRefusal::Address {
                    reason: Blocked::Loopback,
                    ..
                } => {}
                other => panic!("{spelling}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_unspecified_address_in_any_spelling_is_refused() {
        for spelling in [
            "http://0/",
            "http://0.0.0.0/",
            "http://0x0/",
            "http://[::]/",
            "http://0.1.2.3/",
        ] {
            match refusal(spelling) {
                UrlRefusal::Address {
                    reason: Blocked::Unspecified,
                    ..
                } => {}
                other => panic!("{spelling}: {other:?}"),
            }
        }
    }

    #[test]
    fn metadata_private_and_other_internal_ranges_are_refused() {
        let cases = [
            (
                "http://169.254.169.254/latest/meta-data/",
                Blocked::LinkLocal,
            ),
            ("http://[::ffff:169.254.169.254]/", Blocked::LinkLocal),
            ("http://2852039166/", Blocked::LinkLocal),
            ("http://[fe80::1]/", Blocked::LinkLocal),
            ("http://10.0.0.1/", Blocked::Private),
            ("http://172.16.0.1/", Blocked::Private),
            ("http://172.31.255.255/", Blocked::Private),
            ("http://192.168.1.1/", Blocked::Private),
            ("http://[::ffff:10.1.2.3]/", Blocked::Private),
            ("http://100.64.0.1/", Blocked::SharedCgnat),
            ("http://100.127.255.255/", Blocked::SharedCgnat),
            ("http://[fc00::1]/", Blocked::UniqueLocal),
            ("http://[fd12:3456::1]/", Blocked::UniqueLocal),
            ("http://224.0.0.1/", Blocked::Multicast),
            ("http://[ff02::1]/", Blocked::Multicast),
            ("http://255.255.255.255/", Blocked::Broadcast),
            ("http://240.0.0.1/", Blocked::Reserved),
            ("http://192.0.2.10/", Blocked::Reserved),
        ];
        for (url, want) in cases {
            match refusal(url) {
                UrlRefusal::Address { reason, .. } if reason == want => {}
                other => panic!("{url}: {other:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn public_addresses_pass_and_near_misses_of_ranges_are_public() {
        for ip in [
            "93.184.215.14",
            "1.1.1.1",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.1.1",
            "2606:4700:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(classify(ip), None, "{ip}");
        }
    }

    #[test]
    fn only_http_and_https_without_credentials_are_fetched() {
        assert_eq!(
            refusal("ftp://example.com/"),
            UrlRefusal::Scheme("ftp".into())
        );
        assert_eq!(
            refusal("file:///etc/passwd"),
            UrlRefusal::Scheme("file".into())
        );
        assert_eq!(refusal("gopher://x/"), UrlRefusal::Scheme("gopher".into()));
        assert_eq!(
            refusal("http://user:pw@example.com/"),
            UrlRefusal::Credentials
        );
        let ok = Url::parse("https://example.com/a").unwrap();
        assert_eq!(
            check_url(&ok, &deny()).unwrap(),
            Destination::Name("example.com".into())
        );
    }

    #[test]
    fn allow_private_and_trusted_addresses_open_the_gate() {
        let open = AddressPolicy {
            allow_private: true,
            trusted: vec![],
        };
        let url = Url::parse("http://127.0.0.1:9/").unwrap();
        assert!(check_url(&url, &open).is_ok());
        let one = AddressPolicy {
            allow_private: false,
            trusted: vec!["127.0.0.2".parse().unwrap()],
        };
        assert!(one.check("127.0.0.2".parse().unwrap()).is_ok());
        assert!(one.check("::ffff:127.0.0.2".parse().unwrap()).is_ok());
        assert_eq!(
            one.check("127.0.0.1".parse().unwrap()),
            Err(Blocked::Loopback)
        );
    }
}
