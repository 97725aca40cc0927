//! `[telemetry]`: OpenTelemetry export of runs (spans and metrics over OTLP/HTTP).
//!
//! ```toml
//! [telemetry]
//! enabled = true                        # default: on only when OTEL_EXPORTER_OTLP_ENDPOINT is set
//! endpoint = "http://localhost:4318"    # default: OTEL_EXPORTER_OTLP_ENDPOINT
//! protocol = "http/protobuf"            # or "http/json"; default: OTEL_EXPORTER_OTLP_PROTOCOL
//! service_name = "tern"                 # default: OTEL_SERVICE_NAME, else "tern"
//! capture_content = false               # export goals, answers, tool arguments and results
//! ```
//!
//! The keys set here win over the standard variables, as `[model] base_url` wins over
//! `ANTHROPIC_BASE_URL`: a config file is the more deliberate statement. The host resolves the
//! variables (it owns the environment); this section only carries what the files say.

use serde::Deserialize;
use toml::Spanned;

use crate::check::invalid;
use crate::error::Result;
use crate::locate::SourceText;

/// `[telemetry]` as written in one layer.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTelemetry {
    pub(crate) enabled: Option<bool>,
    pub(crate) endpoint: Option<Spanned<String>>,
    pub(crate) protocol: Option<Spanned<String>>,
    pub(crate) service_name: Option<String>,
    pub(crate) capture_content: Option<bool>,
}

/// The OTLP encodings tern can send (both over HTTP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// `http/protobuf` (the OTLP default).
    HttpProtobuf,
    /// `http/json`.
    HttpJson,
}

impl OtlpProtocol {
    /// Parses the spelling of `OTEL_EXPORTER_OTLP_PROTOCOL`. `grpc` is refused: tern does not
    /// build a gRPC client (an OTLP collector takes HTTP on port 4318).
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        match s.trim() {
            "http/protobuf" => Ok(Self::HttpProtobuf),
            "http/json" => Ok(Self::HttpJson),
            "grpc" => Err(
                "`grpc` is not supported: use `http/protobuf` or `http/json` (a collector's OTLP/HTTP \
                 port is 4318)"
                    .into(),
            ),
            other => Err(format!(
                "unknown OTLP protocol {other:?}: use `http/protobuf` or `http/json`"
            )),
        }
    }
}

/// `[telemetry]` keys set so far, layer over layer.
#[derive(Debug, Default, Clone)]
pub(crate) struct TelemetryLayer {
    enabled: Option<bool>,
    endpoint: Option<String>,
    protocol: Option<OtlpProtocol>,
    service_name: Option<String>,
    capture_content: Option<bool>,
}

impl TelemetryLayer {
    pub(crate) fn from_raw(raw: RawTelemetry, source: &SourceText<'_>) -> Result<Self> {
        let protocol = raw
            .protocol
            .map(|p| {
                OtlpProtocol::parse(p.get_ref())
                    .map_err(|e| invalid(source.locate(p.span().start), "telemetry.protocol", &e))
            })
            .transpose()?;
        let endpoint = raw
            .endpoint
            .map(|e| {
                let url = e.get_ref().trim();
                if url.starts_with("http://") || url.starts_with("https://") {
                    Ok(url.trim_end_matches('/').to_string())
                } else {
                    Err(invalid(
                        source.locate(e.span().start),
                        "telemetry.endpoint",
                        "must be an http:// or https:// URL (the collector's OTLP/HTTP base URL)",
                    ))
                }
            })
            .transpose()?;
        Ok(Self {
            enabled: raw.enabled,
            endpoint,
            protocol,
            service_name: raw.service_name,
            capture_content: raw.capture_content,
        })
    }

    pub(crate) fn merge(&mut self, later: TelemetryLayer) {
        macro_rules! over {
            ($($field:ident),*) => {$(
                if later.$field.is_some() {
                    self.$field = later.$field;
                }
            )*};
        }
        over!(enabled, endpoint, protocol, service_name, capture_content);
    }

    pub(crate) fn resolve(self) -> TelemetrySection {
        TelemetrySection {
            enabled: self.enabled,
            endpoint: self.endpoint,
            protocol: self.protocol,
            service_name: self.service_name,
            capture_content: self.capture_content.unwrap_or(false),
        }
    }
}

/// `[telemetry]`, merged. `None` means no layer set the key (the variables decide).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TelemetrySection {
    pub enabled: Option<bool>,
    /// The collector's OTLP/HTTP base URL (`/v1/traces` and `/v1/metrics` are appended).
    pub endpoint: Option<String>,
    pub protocol: Option<OtlpProtocol>,
    pub service_name: Option<String>,
    /// Export goals, answers, tool arguments and results (redacted). Off by default.
    pub capture_content: bool,
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::layers::parse_layer;
    use crate::locate::SourceName;

    fn layer(text: &str) -> Result<TelemetrySection> {
        let name = SourceName::File(PathBuf::from("config.toml"));
        parse_layer(&name, text).map(|l| l.telemetry.resolve())
    }

    #[test]
    fn the_section_parses_and_later_layers_win() {
        let t = layer(
            "[telemetry]\nenabled = true\nendpoint = \"http://c:4318/\"\nprotocol = \"http/json\"\n\
             service_name = \"ci\"\ncapture_content = true\n",
        )
        .unwrap();
        assert_eq!(t.enabled, Some(true));
        assert_eq!(t.endpoint.as_deref(), Some("http://c:4318"));
        assert_eq!(t.protocol, Some(OtlpProtocol::HttpJson));
        assert!(t.capture_content);
        let name = SourceName::File(PathBuf::from("a.toml"));
        let mut merged = parse_layer(&name, "[telemetry]\nenabled = true\n")
            .unwrap()
            .telemetry;
        merged.merge(
            parse_layer(&name, "[telemetry]\nenabled = false\n")
                .unwrap()
                .telemetry,
        );
        assert_eq!(merged.resolve().enabled, Some(false));
        assert_eq!(layer("").unwrap(), TelemetrySection::default());
    }

    #[test]
    fn bad_values_and_unknown_keys_name_the_place() {
        let err = layer("[telemetry]\nprotocol = \"grpc\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("config.toml:2") && err.contains("telemetry.protocol"),
            "{err}"
        );
        assert!(err.contains("http/protobuf"), "{err}");
        let err = layer("[telemetry]\nendpoint = \"collector:4318\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("telemetry.endpoint"), "{err}");
        let err = layer("[telemetry]\nendpont = \"http://c\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("endpont"), "{err}");
    }
}
