//! The export thread: owns the OTLP span exporter and the meter provider, so their blocking HTTP
//! clients never run (or are dropped) on the async runtime.

use std::{collections::HashMap, sync::mpsc, time::Duration};

use opentelemetry::{
    KeyValue,
    metrics::{Histogram, MeterProvider as _},
};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::{
    Resource,
    metrics::{PeriodicReader, SdkMeterProvider},
    trace::{SpanData, SpanExporter as _},
};

use super::{OtlpProtocol, Settings};

/// Spans exported in one request at most; a long session is sent in pieces.
const BATCH: usize = 128;
/// One export's time limit.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// A measurement for the meter.
pub(super) enum Metric {
    /// `gen_ai.client.token.usage`.
    Tokens { count: u64, attrs: Vec<KeyValue> },
    /// `gen_ai.client.operation.duration`, seconds.
    ChatDuration { secs: f64, attrs: Vec<KeyValue> },
    /// `mcp.client.operation.duration`, seconds.
    ToolDuration { secs: f64, attrs: Vec<KeyValue> },
}

/// What the subscriber sends the thread.
pub(super) enum Msg {
    Span(Box<SpanData>),
    Record(Metric),
    /// Export the spans gathered so far (a run finished).
    Flush,
    /// Export everything, shut the exporters down, then answer.
    Shutdown(mpsc::Sender<()>),
}

fn protocol(p: OtlpProtocol) -> Protocol {
    match p {
        OtlpProtocol::HttpProtobuf => Protocol::HttpBinary,
        OtlpProtocol::HttpJson => Protocol::HttpJson,
    }
}

/// Starts the thread. If it cannot be started, the sender's messages are dropped (telemetry
/// never stops a run).
pub(super) fn spawn(
    settings: Settings,
) -> (mpsc::Sender<Msg>, Option<std::thread::JoinHandle<()>>) {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("tern-otel".into())
        .spawn(move || run(settings, rx))
        .map_err(|e| tracing::warn!("telemetry is off: cannot start its thread: {e}"))
        .ok();
    (tx, thread)
}

struct Meters {
    tokens: Histogram<u64>,
    chat: Histogram<f64>,
    tool: Histogram<f64>,
}

fn run(settings: Settings, rx: mpsc::Receiver<Msg>) {
    let resource = Resource::builder()
        .with_service_name(settings.service_name.clone())
        .with_attributes([KeyValue::new("service.version", env!("CARGO_PKG_VERSION"))])
        .build();
    let headers: HashMap<String, String> = settings.headers.clone().into_iter().collect();
    // The exporters build their own reqwest client: TLS must be ready for it (see
    // `tern_mcp::http_client`), whatever else this process built first.
    drop(tern_mcp::http_client());
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol(settings.protocol))
        .with_endpoint(settings.traces_url.clone())
        .with_timeout(EXPORT_TIMEOUT)
        .with_headers(headers.clone())
        .build();
    let mut exporter = match exporter {
        Ok(e) => Some(e),
        Err(e) => {
            tracing::warn!("telemetry: no span export to {}: {e}", settings.traces_url);
            None
        }
    };
    if let Some(e) = exporter.as_mut() {
        e.set_resource(&resource);
    }
    let metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(protocol(settings.protocol))
        .with_endpoint(settings.metrics_url.clone())
        .with_timeout(EXPORT_TIMEOUT)
        .with_headers(headers)
        .build()
        .map_err(|e| {
            tracing::warn!(
                "telemetry: no metric export to {}: {e}",
                settings.metrics_url
            )
        })
        .ok();
    let provider = metrics.map(|m| {
        SdkMeterProvider::builder()
            .with_resource(resource.clone())
            .with_reader(
                PeriodicReader::builder(m)
                    .with_interval(Duration::from_secs(60))
                    .build(),
            )
            .build()
    });
    let meters = provider.as_ref().map(|p| {
        let meter = p.meter("tern");
        Meters {
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Tokens used per model request")
                .with_boundaries(vec![
                    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0,
                    1048576.0, 4194304.0,
                ])
                .build(),
            chat: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("Duration of model requests")
                .build(),
            tool: meter
                .f64_histogram("mcp.client.operation.duration")
                .with_unit("s")
                .with_description("Duration of MCP tool calls")
                .build(),
        }
    });

    let mut batch: Vec<SpanData> = Vec::new();
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Span(span) => {
                batch.push(*span);
                if batch.len() >= BATCH {
                    export(exporter.as_ref(), &mut batch);
                }
            }
            Msg::Record(metric) => {
                if let Some(m) = &meters {
                    match metric {
                        Metric::Tokens { count, attrs } => m.tokens.record(count, &attrs),
                        Metric::ChatDuration { secs, attrs } => m.chat.record(secs, &attrs),
                        Metric::ToolDuration { secs, attrs } => m.tool.record(secs, &attrs),
                    }
                }
            }
            Msg::Flush => export(exporter.as_ref(), &mut batch),
            Msg::Shutdown(ack) => {
                export(exporter.as_ref(), &mut batch);
                if let Some(p) = &provider
                    && let Err(err) = p.shutdown()
                {
                    tracing::warn!("telemetry: metric export failed: {err}");
                }
                if let Some(e) = exporter.as_mut() {
                    let _ = e.shutdown();
                }
                let _ = ack.send(());
                return;
            }
        }
    }
}

/// Sends the gathered spans in one request.
fn export(exporter: Option<&opentelemetry_otlp::SpanExporter>, batch: &mut Vec<SpanData>) {
    if batch.is_empty() {
        return;
    }
    let spans = std::mem::take(batch);
    if let Some(e) = exporter
        && let Err(err) = futures::executor::block_on(e.export(spans))
    {
        tracing::warn!("telemetry: span export failed: {err}");
    }
}
