//! Name resolution with the SSRF guard applied at connect time.
//!
//! The guard must judge the very addresses the connection uses; resolving once
//! to check and letting the HTTP client resolve again to connect would let a
//! DNS server answer "public" to the check and "127.0.0.1" to the connect
//! (DNS rebinding). So the check lives *inside* the client's resolver:
//! reqwest calls [`GuardedResolver`], which resolves once, refuses the whole
//! answer if any address is not allowed, and hands exactly the vetted
//! addresses to the connector. IP literals never reach a resolver; they are
//! checked from the URL (`guard::check_url`) before each request.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;

use crate::guard::{AddressPolicy, Blocked};

/// A boxed lookup future.
pub type Lookup = Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>>;

/// Turns a host name into addresses. The system resolver in production;
/// tests inject a fixed table.
pub trait HostResolver: Send + Sync + 'static {
    fn lookup(&self, host: &str) -> Lookup;
}

/// The operating system's resolver (getaddrinfo on the blocking pool).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl HostResolver for SystemResolver {
    fn lookup(&self, host: &str) -> Lookup {
        let host = host.to_string();
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// Why a name was not resolved to something we may connect to.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("cannot resolve `{host}`: {source}")]
    Lookup {
        host: String,
        source: std::io::Error,
    },
    #[error("`{host}` has no addresses")]
    NoAddresses { host: String },
    #[error("`{host}` resolves to {ip}, which is {reason}")]
    Refused {
        host: String,
        ip: IpAddr,
        reason: Blocked,
    },
}

/// Resolves with `inner` and lets through only answers the policy accepts.
pub struct GuardedResolver {
    inner: Arc<dyn HostResolver>,
    policy: Arc<AddressPolicy>,
}

impl GuardedResolver {
    pub fn new(inner: Arc<dyn HostResolver>, policy: Arc<AddressPolicy>) -> Self {
        Self { inner, policy }
    }

    /// Resolves `host` and vets every address. One bad address refuses the
    /// whole answer: a name that mixes public and internal addresses is
    /// either misconfigured or an attack, and the connector could pick any.
    pub async fn vetted(&self, host: &str) -> Result<Vec<IpAddr>, ResolveError> {
        // `url` keeps IPv6 literals bracketed and names lower-case; reqwest
        // passes names without brackets.
        let addrs = self
            .inner
            .lookup(host)
            .await
            .map_err(|source| ResolveError::Lookup {
                host: host.to_string(),
                source,
            })?;
        if addrs.is_empty() {
            return Err(ResolveError::NoAddresses {
                host: host.to_string(),
            });
        }
        for ip in &addrs {
            self.policy
                .check(*ip)
                .map_err(|reason| ResolveError::Refused {
                    host: host.to_string(),
                    ip: *ip,
                    reason,
                })?;
        }
        Ok(addrs)
    }
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let inner = self.inner.clone();
        let policy = self.policy.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let guard = GuardedResolver { inner, policy };
            let addrs = guard.vetted(&host).await?;
            // The port is replaced by the connector with the URL's port.
            let addrs: reqwest::dns::Addrs =
                Box::new(addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// A fixed name → addresses table, for tests and for offline use.
#[derive(Debug, Clone, Default)]
pub struct StaticResolver {
    pub table: Vec<(String, Vec<IpAddr>)>,
}

impl HostResolver for StaticResolver {
    fn lookup(&self, host: &str) -> Lookup {
        let found = self
            .table
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(host))
            .map(|(_, addrs)| addrs.clone());
        let host = host.to_string();
        Box::pin(async move {
            found.ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("no such host `{host}`"),
                )
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolver(policy: AddressPolicy) -> GuardedResolver {
        let table = StaticResolver {
            table: vec![
                ("public.test".into(), vec!["93.184.215.14".parse().unwrap()]),
                ("local.test".into(), vec!["127.0.0.1".parse().unwrap()]),
                (
                    "mixed.test".into(),
                    vec![
                        "93.184.215.14".parse().unwrap(),
                        "10.0.0.7".parse().unwrap(),
                    ],
                ),
                (
                    "mapped.test".into(),
                    vec!["::ffff:169.254.169.254".parse().unwrap()],
                ),
            ],
        };
        GuardedResolver::new(Arc::new(table), Arc::new(policy))
    }

    #[tokio::test]
    async fn public_answers_pass() {
        let r = resolver(AddressPolicy::default());
        assert_eq!(r.vetted("public.test").await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn any_internal_address_in_the_answer_refuses_the_name() {
        let r = resolver(AddressPolicy::default());
        for (host, reason) in [
            ("local.test", Blocked::Loopback),
            ("mixed.test", Blocked::Private),
            ("mapped.test", Blocked::LinkLocal),
        ] {
            match r.vetted(host).await {
                Err(ResolveError::Refused { reason: got, .. }) if got == reason => {}
                other => panic!("{host}: {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn unknown_names_are_lookup_errors_and_allow_private_opens() {
        let r = resolver(AddressPolicy::default());
        assert!(matches!(
            r.vetted("nope.test").await,
            Err(ResolveError::Lookup { .. })
        ));
        let open = resolver(AddressPolicy {
            allow_private: true,
            trusted: vec![],
        });
        assert!(open.vetted("local.test").await.is_ok());
    }
}
