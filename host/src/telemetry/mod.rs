//! OpenTelemetry export of runs: spans following the GenAI semantic conventions and token and
//! duration metrics, sent over OTLP/HTTP (protobuf or JSON) by the `opentelemetry-otlp`
//! exporter. Off unless `[telemetry] enabled = true` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
//!
//! * `invoke_agent tern` — one per run (the root);
//! * `chat {model}` — one per model request: model, usage, finish reason;
//! * `execute_tool {tool}` — one per tool call: tool, call id, MCP server and method, the
//!   permission decision, the error type. Its id is derived from the run and call ids
//!   ([`ids`]), and the gateway sends it to the server as the W3C `traceparent` in the
//!   request's `_meta`, so a traced MCP server's spans join the run's trace.
//!
//! Spans are built from the run's events (a [`Subscriber`](crate::agent::Subscriber)) and
//! handed to a thread that owns the exporters, so no network I/O happens on the event path.
//! Prompts, answers, tool arguments and results are never exported unless `capture_content` is
//! set; what is exported passes through the run's redactor either way.

mod export;
pub mod ids;
mod spans;

use std::collections::BTreeMap;

pub use spans::OtelSubscriber;
pub use tern_config::OtlpProtocol;

/// Where and how to export, resolved from `[telemetry]` and the `OTEL_*` variables.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `…/v1/traces`.
    pub traces_url: String,
    /// `…/v1/metrics`.
    pub metrics_url: String,
    pub protocol: OtlpProtocol,
    pub service_name: String,
    /// Extra request headers (`OTEL_EXPORTER_OTLP_HEADERS`: `key=value,key=value`).
    pub headers: BTreeMap<String, String>,
    /// Export goals, answers, tool arguments and results.
    pub capture_content: bool,
}

/// The OpenTelemetry export of one run, when export is on. The caller makes it (like the printer)
/// and the engine turns it into the run's subscriber once the run's redactor exists.
pub struct Exporter(Settings);

impl Exporter {
    /// The exporter `[telemetry]` and the `OTEL_*` variables of `ws` ask for; `None` when export
    /// is off; a bad setting is a usage error.
    pub fn for_workspace(
        ws: &crate::workspace::Workspace,
    ) -> Result<Option<Self>, crate::error::UsageError> {
        Settings::resolve(&ws.config.telemetry, &ws.env)
            .map(|s| s.map(Self))
            .map_err(|e| crate::error::UsageError(format!("telemetry: {e}")))
    }

    /// The run's subscriber: spans and metrics from its events, content through `redactor`.
    pub fn subscriber(
        self,
        redactor: std::sync::Arc<tern_gateway::Redactor>,
    ) -> Box<dyn crate::agent::Subscriber> {
        Box::new(OtelSubscriber::start(self.0, redactor))
    }
}

/// The OTLP/HTTP port of a local collector.
const DEFAULT_ENDPOINT: &str = "http://localhost:4318";

impl Settings {
    /// The settings, or `None` when export is off. A bad protocol is an error to show the user.
    ///
    /// Precedence: `[telemetry]` keys, then the standard variables, then the defaults.
    /// `OTEL_SDK_DISABLED=true` turns export off whatever the config says.
    pub fn resolve(
        config: &tern_config::TelemetrySection,
        env: &BTreeMap<String, String>,
    ) -> Result<Option<Settings>, String> {
        let var = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let env_endpoint = var("OTEL_EXPORTER_OTLP_ENDPOINT");
        let enabled = config.enabled.unwrap_or(
            env_endpoint.is_some() || var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some(),
        );
        if !enabled {
            return Ok(None);
        }
        let signal_url = |signal_var: &str, path: &str| match (&config.endpoint, var(signal_var)) {
            (Some(base), _) => format!("{}/{path}", base.trim_end_matches('/')),
            (None, Some(full)) => full.to_string(),
            (None, None) => format!(
                "{}/{path}",
                env_endpoint
                    .unwrap_or(DEFAULT_ENDPOINT)
                    .trim_end_matches('/')
            ),
        };
        let protocol = match (config.protocol, var("OTEL_EXPORTER_OTLP_PROTOCOL")) {
            (Some(p), _) => p,
            (None, Some(p)) => {
                OtlpProtocol::parse(p).map_err(|e| format!("OTEL_EXPORTER_OTLP_PROTOCOL: {e}"))?
            }
            (None, None) => OtlpProtocol::HttpProtobuf,
        };
        let headers = var("OTEL_EXPORTER_OTLP_HEADERS")
            .map(parse_headers)
            .unwrap_or_default();
        Ok(Some(Settings {
            traces_url: signal_url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "v1/traces"),
            metrics_url: signal_url("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "v1/metrics"),
            protocol,
            service_name: config
                .service_name
                .clone()
                .or_else(|| var("OTEL_SERVICE_NAME").map(str::to_owned))
                .unwrap_or_else(|| "tern".into()),
            headers,
            capture_content: config.capture_content
                || var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
                    .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        }))
    }
}

/// `key=value,key2=value2`, values percent-decoded (the OTLP exporter spec's format).
fn parse_headers(s: &str) -> BTreeMap<String, String> {
    s.split(',')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            let k = k.trim();
            (!k.is_empty()).then(|| (k.to_string(), percent_decode(v.trim())))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use tern_config::TelemetrySection;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn off_unless_configured_or_an_endpoint_is_set() {
        let none = TelemetrySection::default();
        assert_eq!(Settings::resolve(&none, &env(&[])).unwrap(), None);
        let on = Settings::resolve(
            &none,
            &env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
                ("OTEL_SERVICE_NAME", "ci-agent"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "x-team=abc%20def, k = v"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(on.traces_url, "http://collector:4318/v1/traces");
        assert_eq!(on.metrics_url, "http://collector:4318/v1/metrics");
        assert_eq!(on.protocol, OtlpProtocol::HttpJson);
        assert_eq!(on.service_name, "ci-agent");
        assert_eq!(on.headers["x-team"], "abc def");
        assert_eq!(on.headers["k"], "v");
        assert!(!on.capture_content);
        // The standard kill switch wins.
        let off = Settings::resolve(
            &TelemetrySection {
                enabled: Some(true),
                ..TelemetrySection::default()
            },
            &env(&[("OTEL_SDK_DISABLED", "true")]),
        )
        .unwrap();
        assert_eq!(off, None);
        // A config that says no wins over the variable.
        let no = TelemetrySection {
            enabled: Some(false),
            ..TelemetrySection::default()
        };
        assert_eq!(
            Settings::resolve(&no, &env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c")])).unwrap(),
            None
        );
    }

    #[test]
    fn config_keys_win_and_grpc_is_refused_clearly() {
        let config = TelemetrySection {
            enabled: Some(true),
            endpoint: Some("http://mine:4318".into()),
            protocol: None,
            service_name: Some("tern-ci".into()),
            capture_content: true,
        };
        let s = Settings::resolve(
            &config,
            &env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://theirs:4318"),
                ("OTEL_SERVICE_NAME", "other"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(s.traces_url, "http://mine:4318/v1/traces");
        assert_eq!(s.service_name, "tern-ci");
        assert!(s.capture_content);
        assert_eq!(s.protocol, OtlpProtocol::HttpProtobuf);
        let err = Settings::resolve(&config, &env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]))
            .unwrap_err();
        assert!(err.contains("grpc") && err.contains("4318"), "{err}");
        let local = Settings::resolve(
            &TelemetrySection {
                enabled: Some(true),
                ..TelemetrySection::default()
            },
            &env(&[]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(local.traces_url, "http://localhost:4318/v1/traces");
    }
}
