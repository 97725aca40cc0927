//! One fetch: the redirect loop, the caps, and errors that name what failed.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use url::Url;

use crate::convert::{self, Kind};
use crate::guard::{AddressPolicy, UrlRefusal, check_url};
use crate::resolve::{GuardedResolver, HostResolver, ResolveError};

/// Size and time caps for one fetch.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Bytes of body downloaded at most; the rest is not read.
    pub max_bytes: usize,
    /// Time to establish a TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Time for the whole fetch, redirects and body included.
    pub total_timeout: Duration,
    /// Redirect hops followed at most.
    pub max_redirects: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_bytes: 5 * 1024 * 1024,
            connect_timeout: Duration::from_secs(10),
            total_timeout: Duration::from_secs(30),
            max_redirects: 10,
        }
    }
}

/// A successful response, before conversion.
#[derive(Debug)]
pub struct Fetched {
    pub url: Url,
    pub final_url: Url,
    pub status: u16,
    pub content_type: Option<String>,
    pub kind: Kind,
    pub body: Vec<u8>,
    /// The body was longer than [`Limits::max_bytes`] and was cut.
    pub body_truncated: bool,
    pub redirects: usize,
}

/// Why a fetch failed. Every message names the URL it is about.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("`{url}` is not a valid URL: {source}")]
    InvalidUrl {
        url: String,
        source: url::ParseError,
    },
    #[error(
        "refused to fetch {url}: {reason} (tern-web does not reach private, loopback or \
         link-local addresses unless started with --allow-private)"
    )]
    Blocked { url: Url, reason: String },
    #[error("refused to fetch {url}: {reason}")]
    Refused { url: Url, reason: UrlRefusal },
    #[error("cannot fetch {url}: DNS lookup failed: {reason}")]
    Dns { url: Url, reason: String },
    #[error("cannot fetch {url}: {reason}")]
    Connect { url: Url, reason: String },
    #[error("fetching {url} timed out after {} s", after.as_secs())]
    Timeout { url: Url, after: Duration },
    #[error("{url} redirected more than {max} times")]
    TooManyRedirects { url: Url, max: usize },
    #[error("{url} answered {status} with an unusable Location `{location}`")]
    BadRedirect {
        url: Url,
        status: u16,
        location: String,
    },
    #[error("{url} answered HTTP {status}{}", if snippet.is_empty() { String::new() } else { format!(":\n{snippet}") })]
    Status {
        url: Url,
        status: u16,
        snippet: String,
    },
    #[error("{url} returned binary content ({content_type}); only HTML and text are returned")]
    Binary { url: Url, content_type: String },
    #[error("cannot start the HTTP client: {0}")]
    Client(String),
    /// A later hop failed: says where the redirect chain started.
    #[error("{source} (reached by redirect from {from})")]
    Redirected { from: Url, source: Box<FetchError> },
}

impl FetchError {
    /// The error itself, without redirect context.
    pub fn root(&self) -> &FetchError {
        match self {
            FetchError::Redirected { source, .. } => source.root(),
            other => other,
        }
    }
}

/// Characters of an error page shown in a status error.
const ERROR_SNIPPET_CHARS: usize = 500;

/// Fetches URLs under an address policy.
#[derive(Debug, Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    policy: Arc<AddressPolicy>,
    limits: Limits,
}

impl Fetcher {
    /// A fetcher whose every connection goes through `resolver` and `policy`.
    pub fn new(
        policy: AddressPolicy,
        resolver: Arc<dyn HostResolver>,
        limits: Limits,
    ) -> Result<Self, FetchError> {
        let policy = Arc::new(policy);
        // rustls's `ring` provider, installed for the process before the first client (tern
        // builds reqwest without a provider of its own).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            // We follow redirects ourselves, checking every hop.
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would connect on our behalf to addresses we never vet.
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver::new(resolver, policy.clone())))
            .connect_timeout(limits.connect_timeout)
            .user_agent(concat!("tern-web/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FetchError::Client(error_chain(&e)))?;
        Ok(Self {
            client,
            policy,
            limits,
        })
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Fetches `url`, following up to `max_redirects` redirects, within the
    /// total timeout.
    pub async fn fetch(&self, url: &str) -> Result<Fetched, FetchError> {
        let start = Url::parse(url).map_err(|source| FetchError::InvalidUrl {
            url: url.to_string(),
            source,
        })?;
        let after = self.limits.total_timeout;
        match tokio::time::timeout(after, self.follow(start.clone())).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout { url: start, after }),
        }
    }

    async fn follow(&self, start: Url) -> Result<Fetched, FetchError> {
        self.follow_hops(start.clone())
            .await
            .map_err(|(error, hops)| match hops {
                0 => error,
                _ => FetchError::Redirected {
                    from: start,
                    source: Box::new(error),
                },
            })
    }

    /// The redirect loop; an error comes with the number of hops taken.
    async fn follow_hops(&self, start: Url) -> Result<Fetched, (FetchError, usize)> {
        let mut url = start.clone();
        for redirects in 0..=self.limits.max_redirects {
            // IP literals never reach the resolver, so they are checked here;
            // names are checked by the resolver when the connection is made.
            check_url(&url, &self.policy)
                .map_err(|reason| match reason {
                    UrlRefusal::Address { .. } => FetchError::Blocked {
                        url: url.clone(),
                        reason: reason.to_string(),
                    },
                    _ => FetchError::Refused {
                        url: url.clone(),
                        reason,
                    },
                })
                .map_err(|e| (e, redirects))?;
            let response = self
                .client
                .get(url.clone())
                .header(
                    ACCEPT,
                    "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
                )
                .send()
                .await
                .map_err(|e| (request_error(&url, &e), redirects))?;
            let status = response.status();
            // A 3xx without Location (304, 300) is an ordinary response.
            if status.is_redirection()
                && let Some(location) = response.headers().get(LOCATION)
            {
                let location = String::from_utf8_lossy(location.as_bytes()).into_owned();
                url = url.join(&location).map_err(|_| {
                    let error = FetchError::BadRedirect {
                        url: url.clone(),
                        status: status.as_u16(),
                        location,
                    };
                    (error, redirects)
                })?;
                continue;
            }
            return self
                .read(start, url, redirects, response)
                .await
                .map_err(|e| (e, redirects));
        }
        let error = FetchError::TooManyRedirects {
            url: start,
            max: self.limits.max_redirects,
        };
        Err((error, 0))
    }

    async fn read(
        &self,
        start: Url,
        url: Url,
        redirects: usize,
        mut response: reqwest::Response,
    ) -> Result<Fetched, FetchError> {
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let declared_kind = content_type
            .as_deref()
            .map(|ct| convert::classify(Some(ct), b""));
        let is_error = status >= 400;
        if declared_kind == Some(Kind::Binary) && !is_error {
            // Do not download what we will not return.
            return Err(FetchError::Binary {
                url,
                content_type: content_type.unwrap_or_default(),
            });
        }
        // An error page is only shown as a snippet: no need to download much of it.
        let cap = if is_error {
            64 * 1024
        } else {
            self.limits.max_bytes
        };
        let mut body = Vec::new();
        let mut body_truncated = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| request_error(&url, &e))?
        {
            let room = cap - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                body_truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let kind = convert::classify(content_type.as_deref(), &body);
        if is_error {
            return Err(FetchError::Status {
                url,
                status,
                snippet: error_snippet(&body, content_type.as_deref(), kind),
            });
        }
        if kind == Kind::Binary {
            return Err(FetchError::Binary {
                url,
                content_type: content_type.unwrap_or_else(|| "unknown type, not text".into()),
            });
        }
        Ok(Fetched {
            url: start,
            final_url: url,
            status,
            content_type,
            kind,
            body,
            body_truncated,
            redirects,
        })
    }
}

fn error_snippet(body: &[u8], content_type: Option<&str>, kind: Kind) -> String {
    let text = match kind {
        Kind::Binary => return String::new(),
        Kind::Html => convert::html_to_markdown(&convert::decode(body, content_type)),
        Kind::Text => convert::decode(body, content_type),
    };
    let (snippet, cut) = convert::truncate_chars(text.trim(), ERROR_SNIPPET_CHARS);
    if cut {
        format!("{snippet}…")
    } else {
        snippet.to_string()
    }
}

/// Maps a reqwest error to what went wrong, finding our resolver's verdict
/// inside the error chain when there is one.
fn request_error(url: &Url, error: &reqwest::Error) -> FetchError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(resolve) = e.downcast_ref::<ResolveError>() {
            return match resolve {
                ResolveError::Refused { .. } => FetchError::Blocked {
                    url: url.clone(),
                    reason: resolve.to_string(),
                },
                ResolveError::Lookup { .. } | ResolveError::NoAddresses { .. } => FetchError::Dns {
                    url: url.clone(),
                    reason: resolve.to_string(),
                },
            };
        }
        source = e.source();
    }
    if error.is_timeout() {
        return FetchError::Connect {
            url: url.clone(),
            reason: format!("timed out: {}", error_chain(error)),
        };
    }
    FetchError::Connect {
        url: url.clone(),
        reason: error_chain(error),
    }
}

/// "outer: inner: root cause", skipping repeats (hyper and reqwest often
/// repeat the inner message in the outer one).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut source: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = source {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = e.source();
    }
    parts.join(": ")
}
